-- Locks the runtime rows of the runs p_worker holds under p_fences, in
-- job_id order (FOR UPDATE, the lock the end of a run takes), for a
-- transaction that then writes them with more than one call.
--
-- Every function that locks several runtime rows locks them in job_id order
-- (docs/sql.md), so two of them never wait for each other in a cycle. The
-- worker's writer records a batch of finished runs in one transaction of up
-- to three calls (workhorse_sleep_many_v1, workhorse_succeed_many_v1,
-- workhorse_fail_many_v1), each in job_id order over its own jobs only: a
-- success of job 2 followed by a failure of job 1 held job 2 while it
-- waited for job 1, and a heartbeat renewal or an idle worker's
-- workhorse_next_run_at_v1, holding job 1 and asking for job 2, closed a
-- deadlock (PostgreSQL aborted one of them: a heartbeat left its leases to
-- expire). Called first in such a transaction, this takes the whole
-- batch's locks in one pass in job_id order; the calls then find them held.
-- A run no longer held under that fence is not locked (the call that
-- writes it refuses it). Returns how many rows it locked.
CREATE OR REPLACE FUNCTION workhorse_lock_runs_v1(
    p_worker text,
    p_job_ids bigint[],
    p_fences bigint[]
) RETURNS integer
-- Index paths whatever the statistics say, for the life of a session's
-- cached plans (docs/sql.md, "Plans that do not depend on statistics").
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    v_n integer;
BEGIN
    IF cardinality(p_fences) IS DISTINCT FROM cardinality(p_job_ids) THEN
        RAISE EXCEPTION 'workhorse_lock_runs_v1: % ids, % fences',
            cardinality(p_job_ids), cardinality(p_fences)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- A locking primary-key probe per run, in job_id order, as in
    -- workhorse_end_runs_v1.
    WITH input AS (
        SELECT i.job_id, i.fence FROM unnest(p_job_ids, p_fences) AS i(job_id, fence)
        ORDER BY i.job_id
    )
    SELECT count(r.job_id) INTO v_n
    FROM input i
    LEFT JOIN LATERAL (
        SELECT rt.job_id FROM workhorse_job_runtime rt
        WHERE rt.job_id = i.job_id AND rt.fence = i.fence AND rt.worker_id = p_worker
        FOR UPDATE
    ) r ON true;
    RETURN v_n;
END;
$$;
