-- Re-created by migration 0002 (docs/releasing.md): the same arguments,
-- result and meaning as workhorse_heartbeat_many_v1.sql. A renewal's lease
-- runs from the moment it is granted (clock_timestamp(), read after the row
-- locks are held), not from the start of the transaction: a renewal that
-- waited on a lock (a migration's, an operator's) came back "renewed" with a
-- lease already in the past, and the next stall sweep took the job.
--
-- Renews the leases of many active jobs in one call. A job is renewed only if
-- it is still active under (p_worker, fence); every other id comes back with
-- renewed = false: the lease was lost (recovered, or claimed by another run)
-- and the caller must not assume it still owns the job. cancel_requested
-- carries an operator's cancel to the worker running the job. Rows come back
-- in input order. With p_worker_info the call also records the worker as
-- seen now (workhorse_worker), so the live workers cost no call of their own.
CREATE OR REPLACE FUNCTION workhorse_heartbeat_many_v1(
    p_worker text,
    p_job_ids bigint[],
    p_fences bigint[],
    p_lease_seconds double precision DEFAULT 30,
    -- What the worker says of itself, for the workers view
    -- (worker_registry_v1.sql); NULL leaves its row alone.
    p_worker_info jsonb DEFAULT NULL
) RETURNS TABLE (job_id bigint, renewed boolean, cancel_requested boolean, lease_expires_at timestamptz)
-- Index paths whatever the statistics say, for the life of a session's
-- cached plans (docs/sql.md, "Plans that do not depend on statistics").
LANGUAGE plpgsql SET enable_seqscan = off AS $$
-- PL/pgSQL, not LANGUAGE sql: PostgreSQL caches a PL/pgSQL statement's plan
-- for the session, while a SQL function's body is planned on every call.
#variable_conflict use_column
BEGIN
    -- unnest would pad a short array with NULLs and lose the pairing. A job
    -- named twice is renewed once (the UPDATE below takes each row once) and
    -- answered on each of its rows: a renewal is idempotent, and a worker may
    -- hold two runs of one job at once (a timed-out one still being written
    -- and its retry), each with its own fence.
    IF NOT p_lease_seconds BETWEEN 0 AND 3155760000 OR p_lease_seconds IS NULL THEN
        RAISE EXCEPTION 'workhorse_heartbeat_many_v1: p_lease_seconds must be from 0 to 3155760000, got %',
            p_lease_seconds USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(p_fences) IS DISTINCT FROM cardinality(p_job_ids) THEN
        RAISE EXCEPTION 'workhorse_heartbeat_many_v1: % ids, % fences',
            cardinality(p_job_ids), cardinality(p_fences) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_worker_info IS NOT NULL THEN
        -- Keyed by the worker's id, not the owner name of its current claim
        -- session (claims.py may add a suffix to it).
        INSERT INTO workhorse_worker AS w (worker_id, info)
        VALUES (coalesce(p_worker_info ->> 'worker_id', p_worker), p_worker_info)
        ON CONFLICT (worker_id) DO UPDATE SET info = excluded.info, last_seen_at = clock_timestamp();
    END IF;
    RETURN QUERY
    WITH input AS (
        SELECT * FROM unnest(p_job_ids, p_fences) WITH ORDINALITY AS i(job_id, fence, ord)
        ORDER BY i.job_id
    ),
    -- The owner lookup of succeed_many: a locking primary-key probe per
    -- input row, in job_id order (docs/sql.md). NO KEY UPDATE, the lock the
    -- UPDATE below takes anyway: FOR UPDATE would wait for every open
    -- transaction that enqueued a dependent of the job (it holds the row
    -- FOR KEY SHARE until it commits), and with it the leases of all the
    -- worker's other jobs.
    owned AS (
        SELECT i.job_id, i.ord, r.job_id IS NOT NULL AS ok, r.cancel_requested
        FROM input i
        LEFT JOIN LATERAL (
            SELECT rt.job_id, rt.cancel_requested
            FROM workhorse_job_runtime rt
            WHERE rt.job_id = i.job_id AND rt.fence = i.fence AND rt.worker_id = p_worker
            FOR NO KEY UPDATE
        ) r ON true
    ),
    renewed AS (
        UPDATE workhorse_job_runtime rt
        SET lease_expires_at = clock_timestamp() + make_interval(secs => p_lease_seconds)
        WHERE rt.job_id = ANY (ARRAY(SELECT o.job_id FROM owned o WHERE o.ok))
        RETURNING rt.job_id, rt.lease_expires_at
    )
    SELECT o.job_id, o.ok, coalesce(o.cancel_requested, false), r.lease_expires_at
    FROM owned o LEFT JOIN renewed r ON r.job_id = o.job_id AND o.ok
    ORDER BY o.ord;
END;
$$;
