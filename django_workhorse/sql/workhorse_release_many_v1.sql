-- Gives running jobs back without consuming an attempt (a worker shutting
-- down): each (job, fence) still active under p_worker returns to ready with
-- its attempt counter as it was before the claim, and keeps its place in line
-- (run_at is unchanged). No attempt_history row: the attempt never counted.
-- Any other id comes back with ok = false and nothing changes.
CREATE OR REPLACE FUNCTION workhorse_release_many_v1(
    p_worker text,
    p_job_ids bigint[],
    p_fences bigint[]
) RETURNS TABLE (job_id bigint, ok boolean)
LANGUAGE plpgsql AS $$
-- PL/pgSQL, not LANGUAGE sql: PostgreSQL caches a PL/pgSQL statement's plan
-- for the session, while a SQL function's body is planned on every call.
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH input AS (
        SELECT * FROM unnest(p_job_ids, p_fences) AS i(job_id, fence)
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
    released AS (
        UPDATE workhorse_job_runtime rt
        SET state = 'ready', attempt = rt.attempt - 1,
            worker_id = NULL, lease_expires_at = NULL, attempt_started_at = NULL
        FROM owned o
        WHERE rt.job_id = o.job_id
        RETURNING rt.job_id, rt.queue, rt.attempt
    ),
    evented AS (
        INSERT INTO workhorse_job_event (job_id, kind, attempt, worker_id)
        SELECT r.job_id, 'released', r.attempt + 1, p_worker FROM released r
    ),
    woken AS (
        SELECT pg_notify('workhorse:' || r.queue, '') FROM released r GROUP BY r.queue
    )
    SELECT i.job_id, r.job_id IS NOT NULL
    FROM input i LEFT JOIN released r ON r.job_id = i.job_id
    CROSS JOIN (SELECT count(*) FROM woken) w;
END;
$$;
