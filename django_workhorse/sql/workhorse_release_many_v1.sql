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
-- Index paths whatever the statistics say, for the life of a session's
-- cached plans (docs/sql.md, "Plans that do not depend on statistics").
LANGUAGE plpgsql SET enable_seqscan = off AS $$
-- PL/pgSQL, not LANGUAGE sql: PostgreSQL caches a PL/pgSQL statement's plan
-- for the session, while a SQL function's body is planned on every call.
#variable_conflict use_column
DECLARE
    v_cancel_ids    bigint[];
    v_cancel_fences bigint[];
    v_ids           bigint[];
    v_ok            boolean[];
    v_canceled      boolean[];
    v_r_ids         bigint[];
    v_r_attempts    integer[];
    v_r_started     timestamptz[];
    v_n             integer;
BEGIN
    -- unnest would pad a short array with NULLs and lose the pairing.
    IF cardinality(p_fences) IS DISTINCT FROM cardinality(p_job_ids) THEN
        RAISE EXCEPTION 'workhorse_release_many_v1: % ids, % fences',
            cardinality(p_job_ids), cardinality(p_fences) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- A job named twice is refused, never applied twice (docs/decisions.md).
    PERFORM workhorse_refuse_named_twice_v1('workhorse_release_many_v1', p_job_ids);
    -- The owner lookup of succeed_many: a locking primary-key probe per
    -- input row, in job_id order (docs/sql.md). The cancel flag is read
    -- under the lock, so a cancel cannot be requested between reading it and
    -- the release.
    WITH input AS (
        SELECT * FROM unnest(p_job_ids, p_fences) WITH ORDINALITY AS i(job_id, fence, ord)
        ORDER BY i.job_id
    ),
    owned AS (
        SELECT i.job_id, i.fence, i.ord, r.job_id IS NOT NULL AS ok,
               coalesce(r.cancel_requested, false) AS cancel, r.attempt, r.attempt_started_at
        FROM input i
        LEFT JOIN LATERAL (
            SELECT rt.job_id, rt.cancel_requested, rt.attempt, rt.attempt_started_at
            FROM workhorse_job_runtime rt
            WHERE rt.job_id = i.job_id AND rt.fence = i.fence AND rt.worker_id = p_worker
            FOR UPDATE
        ) r ON true
    )
    SELECT array_agg(o.job_id ORDER BY o.ord), array_agg(o.ok ORDER BY o.ord),
           array_agg(o.ok AND o.cancel ORDER BY o.ord),
           coalesce(array_agg(o.job_id) FILTER (WHERE o.ok AND o.cancel), '{}'),
           coalesce(array_agg(o.fence) FILTER (WHERE o.ok AND o.cancel), '{}'),
           array_agg(o.job_id) FILTER (WHERE o.ok AND NOT o.cancel),
           array_agg(o.attempt) FILTER (WHERE o.ok AND NOT o.cancel),
           array_agg(o.attempt_started_at) FILTER (WHERE o.ok AND NOT o.cancel)
    INTO v_ids, v_ok, v_canceled, v_cancel_ids, v_cancel_fences, v_r_ids, v_r_attempts,
         v_r_started
    FROM owned o;
    IF cardinality(v_cancel_ids) > 0 THEN
        PERFORM workhorse_fail_many_v1(
            p_worker, v_cancel_ids, v_cancel_fences,
            array_fill('{"type": "django_workhorse.exceptions.JobCancelled", "message": "canceled by an operator while its worker was shutting down"}'::jsonb,
                       ARRAY[cardinality(v_cancel_ids)]),
            array_fill('canceled'::text, ARRAY[cardinality(v_cancel_ids)]),
            array_fill(false, ARRAY[cardinality(v_cancel_ids)]),
            NULL);
    END IF;
    -- Ready again with its place in line and the attempt given back; no
    -- history row; a 'released' event and the wake-up
    -- (workhorse_requeue_runs_v1).
    v_n := coalesce(cardinality(v_r_ids), 0);
    IF v_n > 0 THEN
        PERFORM workhorse_requeue_runs_v1(
            v_r_ids, v_r_attempts, array_fill(p_worker, ARRAY[v_n]), v_r_started, NULL, true,
            NULL, NULL, array_fill('released'::text, ARRAY[v_n]), NULL);
    END IF;
    RETURN QUERY SELECT * FROM unnest(v_ids, v_ok, v_canceled);
END;
$$;
