-- Records the success of many runs in one call. For each (job, fence) still
-- active under p_worker: the runtime row is deleted and the outcome row
-- inserted in one statement, the attempt closes as succeeded in
-- attempt_history, and a 'succeeded' event is written
-- (workhorse_end_runs_v1). Any other id comes back
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
    v_queues   text[];
    v_attempts integer[];
    v_stalls   integer[];
    v_started  timestamptz[];
    v_results  jsonb[];
    v_n        integer;
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
    )
    SELECT array_agg(o.job_id ORDER BY o.ord), array_agg(o.ok ORDER BY o.ord),
           array_agg(o.job_id ORDER BY o.job_id) FILTER (WHERE o.ok),
           array_agg(o.queue ORDER BY o.job_id) FILTER (WHERE o.ok),
           array_agg(o.attempt ORDER BY o.job_id) FILTER (WHERE o.ok),
           array_agg(o.stall_count ORDER BY o.job_id) FILTER (WHERE o.ok),
           array_agg(o.attempt_started_at ORDER BY o.job_id) FILTER (WHERE o.ok),
           array_agg(o.result ORDER BY o.job_id) FILTER (WHERE o.ok)
    INTO v_ids, v_ok, v_ended, v_queues, v_attempts, v_stalls, v_started, v_results
    FROM owned o;
    -- Runtime → succeeded outcome, the attempt closed as succeeded, a
    -- 'succeeded' event, the wake-up of limited queues and the dependents
    -- settled: the one home of the move (workhorse_end_runs_v1).
    v_n := coalesce(cardinality(v_ended), 0);
    IF v_n > 0 THEN
        PERFORM workhorse_end_runs_v1(
            v_ended, v_queues, v_attempts, v_stalls, array_fill(p_worker, ARRAY[v_n]), v_started,
            array_fill('succeeded'::text, ARRAY[v_n]), v_results, NULL,
            array_fill('succeeded'::text, ARRAY[v_n]), NULL, NULL);
    END IF;
    RETURN QUERY SELECT u.id, u.ok FROM unnest(v_ids, v_ok) AS u(id, ok);
END;
$$;
