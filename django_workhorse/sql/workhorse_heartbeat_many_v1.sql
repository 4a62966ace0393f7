-- Renews the leases of many active jobs in one call. A job is renewed only if
-- it is still active under (p_worker, fence); every other id comes back with
-- renewed = false: the lease was lost (recovered, or claimed by another run)
-- and the caller must not assume it still owns the job. cancel_requested
-- carries an operator's cancel to the worker running the job.
CREATE OR REPLACE FUNCTION workhorse_heartbeat_many_v1(
    p_worker text,
    p_job_ids bigint[],
    p_fences bigint[],
    p_lease_seconds double precision DEFAULT 30
) RETURNS TABLE (job_id bigint, renewed boolean, cancel_requested boolean, lease_expires_at timestamptz)
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
    renewed AS (
        UPDATE workhorse_job_runtime rt
        SET lease_expires_at = now() + make_interval(secs => p_lease_seconds)
        FROM owned o
        WHERE rt.job_id = o.job_id
        RETURNING rt.job_id, rt.cancel_requested, rt.lease_expires_at
    )
    SELECT i.job_id, r.job_id IS NOT NULL, coalesce(r.cancel_requested, false), r.lease_expires_at
    FROM input i LEFT JOIN renewed r ON r.job_id = i.job_id;
END;
$$;
