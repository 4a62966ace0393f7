-- Internal: the guard of every function that closes or returns runs by
-- (job, fence): a job named twice in one call would be closed or released
-- twice (two history rows and two events for one attempt, the attempt
-- counter lowered twice), and at most one of two fences can be current. It
-- is refused, never applied twice (docs/decisions.md), with an error that
-- names the calling function (p_caller) and the first such job.
CREATE OR REPLACE FUNCTION workhorse_refuse_named_twice_v1(p_caller text, p_job_ids bigint[])
RETURNS void
LANGUAGE plpgsql AS $$
-- PL/pgSQL, not LANGUAGE sql: PostgreSQL caches a PL/pgSQL statement's plan
-- for the session, while a SQL function's body is planned on every call.
DECLARE
    v_twice bigint;
BEGIN
    IF cardinality(p_job_ids) > 1 THEN
        SELECT u.id INTO v_twice FROM unnest(p_job_ids) AS u(id)
        GROUP BY u.id HAVING count(*) > 1 LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION '%: job % is named more than once; name each job once per call',
                p_caller, v_twice USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
END;
$$;
