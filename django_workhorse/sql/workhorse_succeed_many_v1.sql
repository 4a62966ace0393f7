-- Records the success of many runs in one call. For each (job, fence) still
-- active under p_worker: the runtime row is deleted and the outcome row
-- inserted in this same statement, the attempt closes as succeeded in
-- attempt_history, and a 'succeeded' event is written. Any other id comes back
-- with ok = false (a lost lease) and nothing about that job changes.
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
BEGIN
    RETURN QUERY
    WITH input AS (
        SELECT * FROM unnest(p_job_ids, p_fences, p_results) AS i(job_id, fence, result)
    ),
    -- Lock this worker's rows in job_id order first: every function that
    -- locks several runtime rows takes them in the same order, so a heartbeat
    -- and a finish of the same jobs can wait on each other but never deadlock.
    owned AS (
        SELECT rt.job_id FROM workhorse_job_runtime rt
        JOIN input i ON rt.job_id = i.job_id AND rt.fence = i.fence
        WHERE rt.worker_id = p_worker AND rt.state = 'active'
        ORDER BY rt.job_id
        FOR UPDATE OF rt
    ),
    done AS (
        DELETE FROM workhorse_job_runtime rt
        USING owned o, input i
        WHERE rt.job_id = o.job_id AND i.job_id = o.job_id
        RETURNING rt.job_id, rt.attempt, rt.stall_count, rt.attempt_started_at, i.result
    ),
    outcome AS (
        INSERT INTO workhorse_job_outcome (job_id, state, result, attempts, stall_count, finished_at)
        SELECT d.job_id, 'succeeded', d.result, d.attempt, d.stall_count, now() FROM done d
    ),
    history AS (
        INSERT INTO workhorse_attempt_history (job_id, attempt, outcome, worker_id, started_at, finished_at)
        SELECT d.job_id, d.attempt, 'succeeded', p_worker, d.attempt_started_at, now() FROM done d
    ),
    evented AS (
        INSERT INTO workhorse_job_event (job_id, kind, attempt, worker_id)
        SELECT d.job_id, 'succeeded', d.attempt, p_worker FROM done d
    )
    SELECT i.job_id, d.job_id IS NOT NULL FROM input i LEFT JOIN done d ON d.job_id = i.job_id;
END;
$$;
