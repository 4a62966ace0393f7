-- Gives running jobs back without consuming an attempt (a worker shutting
-- down): each (job, fence) still active under p_worker returns to ready with
-- its attempt counter as it was before the claim, and keeps its place in line
-- (run_at is unchanged). No attempt_history row: the attempt never counted.
-- Any other id comes back with ok = false and nothing changes. Rows come back
-- in input order.
--
-- A job an operator asked to cancel (cancel_requested) is not put back in
-- line, which would undo the cancel: it ends 'canceled' through
-- workhorse_fail_many_v1 (kind 'canceled'), and comes back with ok and
-- canceled = true.
CREATE OR REPLACE FUNCTION workhorse_release_many_v1(
    p_worker text,
    p_job_ids bigint[],
    p_fences bigint[]
) RETURNS TABLE (job_id bigint, ok boolean, canceled boolean)
LANGUAGE plpgsql AS $$
-- PL/pgSQL, not LANGUAGE sql: PostgreSQL caches a PL/pgSQL statement's plan
-- for the session, while a SQL function's body is planned on every call.
#variable_conflict use_column
DECLARE
    v_twice         bigint;
    v_cancel_ids    bigint[];
    v_cancel_fences bigint[];
BEGIN
    -- unnest would pad a short array with NULLs and lose the pairing.
    IF cardinality(p_fences) IS DISTINCT FROM cardinality(p_job_ids) THEN
        RAISE EXCEPTION 'workhorse_release_many_v1: % ids, % fences',
            cardinality(p_job_ids), cardinality(p_fences) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- A job named twice would be released twice (two released events,
    -- the attempt counter lowered twice): refused, never applied twice (docs/decisions.md).
    IF cardinality(p_job_ids) > 1 THEN
        SELECT u.id INTO v_twice FROM unnest(p_job_ids) AS u(id)
        GROUP BY u.id HAVING count(*) > 1 LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'workhorse_release_many_v1: job % is named more than once; name each job once per call',
                v_twice USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    -- Lock the owned rows first (in job_id order, as everywhere), so that a
    -- cancel cannot be requested between reading the flag and the release.
    SELECT coalesce(array_agg(f.job_id ORDER BY f.job_id) FILTER (WHERE f.cancel_requested), '{}'),
           coalesce(array_agg(f.fence ORDER BY f.job_id) FILTER (WHERE f.cancel_requested), '{}')
    INTO v_cancel_ids, v_cancel_fences
    FROM (SELECT * FROM unnest(p_job_ids, p_fences) AS u(job_id, fence) ORDER BY u.job_id) i
    CROSS JOIN LATERAL (
        SELECT rt.job_id, rt.fence, rt.cancel_requested
        FROM workhorse_job_runtime rt
        WHERE rt.job_id = i.job_id AND rt.fence = i.fence AND rt.worker_id = p_worker
        FOR UPDATE
    ) f;
    IF cardinality(v_cancel_ids) > 0 THEN
        PERFORM workhorse_fail_many_v1(
            p_worker, v_cancel_ids, v_cancel_fences,
            array_fill('{"type": "JobCancelled", "message": "canceled by an operator while its worker was shutting down"}'::jsonb,
                       ARRAY[cardinality(v_cancel_ids)]),
            array_fill('canceled'::text, ARRAY[cardinality(v_cancel_ids)]),
            array_fill(false, ARRAY[cardinality(v_cancel_ids)]),
            NULL);
    END IF;
    RETURN QUERY
    WITH input AS (
        SELECT * FROM unnest(p_job_ids, p_fences) WITH ORDINALITY AS i(job_id, fence, ord)
        ORDER BY i.job_id
    ),
    -- The owner lookup of succeed_many: a locking primary-key probe per
    -- input row, in job_id order (docs/sql.md).
    owned AS (
        SELECT i.job_id, i.ord, r.job_id IS NOT NULL AS ok, r.queue, r.attempt
        FROM input i
        LEFT JOIN LATERAL (
            SELECT rt.job_id, rt.queue, rt.attempt
            FROM workhorse_job_runtime rt
            WHERE rt.job_id = i.job_id AND rt.fence = i.fence AND rt.worker_id = p_worker
            FOR UPDATE
        ) r ON true
    ),
    released AS (
        UPDATE workhorse_job_runtime rt
        SET state = 'ready', attempt = rt.attempt - 1,
            worker_id = NULL, lease_expires_at = NULL, attempt_started_at = NULL
        WHERE rt.job_id = ANY (ARRAY(SELECT o.job_id FROM owned o WHERE o.ok))
    ),
    evented AS (
        INSERT INTO workhorse_job_event (job_id, kind, attempt, worker_id)
        SELECT o.job_id, 'released', o.attempt, p_worker FROM owned o WHERE o.ok
    ),
    woken AS (
        SELECT pg_notify('workhorse:' || o.queue, '') FROM owned o WHERE o.ok GROUP BY o.queue
    )
    SELECT o.job_id, o.ok OR o.job_id = ANY (v_cancel_ids), o.job_id = ANY (v_cancel_ids)
    FROM owned o
    CROSS JOIN (SELECT count(*) FROM woken) w
    ORDER BY o.ord;
END;
$$;
