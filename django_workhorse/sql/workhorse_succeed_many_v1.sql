-- Records the success of many runs in one call. For each (job, fence) still
-- active under p_worker: the runtime row is deleted and the outcome row
-- inserted in this same statement, the attempt closes as succeeded in
-- attempt_history, and a 'succeeded' event is written. Any other id comes back
-- with ok = false (a lost lease) and nothing about that job changes. Rows come
-- back in input order.
CREATE OR REPLACE FUNCTION workhorse_succeed_many_v1(
    p_worker text,
    p_job_ids bigint[],
    p_fences bigint[],
    p_results jsonb[]
) RETURNS TABLE (job_id bigint, ok boolean)
LANGUAGE plpgsql AS $$
-- PL/pgSQL, not LANGUAGE sql: PostgreSQL caches a PL/pgSQL statement's plan
-- for the session, while a SQL function's body is planned on every call.
#variable_conflict use_column
DECLARE
    v_twice bigint;
    v_ids   bigint[];
    v_ok    boolean[];
    v_ended bigint[];
BEGIN
    -- unnest would pad a short array with NULLs and lose the pairing.
    IF cardinality(p_fences) IS DISTINCT FROM cardinality(p_job_ids)
       OR cardinality(p_results) IS DISTINCT FROM cardinality(p_job_ids) THEN
        RAISE EXCEPTION 'workhorse_succeed_many_v1: % ids, % fences, % results',
            cardinality(p_job_ids), cardinality(p_fences), cardinality(p_results)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- A job named twice would be closed twice (two history rows, two
    -- events for one attempt): refused, never applied twice (docs/decisions.md).
    IF cardinality(p_job_ids) > 1 THEN
        SELECT u.id INTO v_twice FROM unnest(p_job_ids) AS u(id)
        GROUP BY u.id HAVING count(*) > 1 LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'workhorse_succeed_many_v1: job % is named more than once; name each job once per call',
                v_twice USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    WITH input AS (
        SELECT * FROM unnest(p_job_ids, p_fences, p_results) WITH ORDINALITY
            AS i(job_id, fence, result, ord)
        ORDER BY i.job_id
    ),
    -- The owner lookup (see docs/sql.md, "Plans that do not depend on
    -- statistics"): one primary-key probe per input row, in job_id order, each
    -- locking its row. Every function that locks several runtime rows takes
    -- them in that order, so a heartbeat and a finish of the same jobs may
    -- wait on each other but never deadlock. worker_id implies
    -- state = 'active' (the owner CHECK).
    owned AS (
        SELECT i.job_id, i.ord, i.result, r.job_id IS NOT NULL AS ok,
               r.queue, r.attempt, r.stall_count, r.attempt_started_at
        FROM input i
        LEFT JOIN LATERAL (
            SELECT rt.job_id, rt.queue, rt.attempt, rt.stall_count, rt.attempt_started_at
            FROM workhorse_job_runtime rt
            WHERE rt.job_id = i.job_id AND rt.fence = i.fence AND rt.worker_id = p_worker
            FOR UPDATE
        ) r ON true
    ),
    done AS (
        DELETE FROM workhorse_job_runtime rt
        WHERE rt.job_id = ANY (ARRAY(SELECT o.job_id FROM owned o WHERE o.ok))
    ),
    outcome AS (
        INSERT INTO workhorse_job_outcome (job_id, state, result, attempts, stall_count, finished_at)
        SELECT o.job_id, 'succeeded', o.result, o.attempt, o.stall_count, now()
        FROM owned o WHERE o.ok
    ),
    history AS (
        INSERT INTO workhorse_attempt_history (job_id, attempt, outcome, worker_id, started_at, finished_at)
        SELECT o.job_id, o.attempt, 'succeeded', p_worker, o.attempt_started_at, now()
        FROM owned o WHERE o.ok
    ),
    evented AS (
        INSERT INTO workhorse_job_event (job_id, kind, attempt, worker_id)
        SELECT o.job_id, 'succeeded', o.attempt, p_worker FROM owned o WHERE o.ok
    ),
    -- A finished job of a queue with a concurrency limit frees a place:
    -- wake the workers waiting for it (docs/worker.md, "Queue limits").
    woken AS (
        SELECT pg_notify('workhorse:' || wq.name, '') FROM workhorse_queue wq
        WHERE wq.concurrency_limit IS NOT NULL
          AND wq.name IN (SELECT o.queue FROM owned o WHERE o.ok)
    )
    SELECT array_agg(o.job_id ORDER BY o.ord), array_agg(o.ok ORDER BY o.ord),
           array_agg(o.job_id) FILTER (WHERE o.ok)
    INTO v_ids, v_ok, v_ended
    FROM owned o
    CROSS JOIN (SELECT count(*) FROM woken) w;
    -- A later statement than the one that wrote the outcomes, so it sees them.
    PERFORM workhorse_settle_dependents_v1(v_ended);
    RETURN QUERY SELECT u.id, u.ok FROM unnest(v_ids, v_ok) AS u(id, ok);
END;
$$;
