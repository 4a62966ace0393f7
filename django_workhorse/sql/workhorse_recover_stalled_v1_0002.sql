-- Re-created by migration 0002 (docs/releasing.md): the same arguments and
-- result as workhorse_recover_stalled_v1.sql. A lease that ran out no longer
-- makes its job recoverable by itself: the job's worker must also have no
-- current liveness proof (workhorse_pulse_v1, workhorse_live_workers_v1).
-- A live worker whose renewals wait (behind its own writer, a lock, a full
-- pool) keeps its jobs; one that is frozen, gone or cut off from the
-- database loses them once its lease and its proof have both run out, and
-- stops its runs itself before that (docs/worker.md#liveness).
--
-- Recovers up to p_limit active jobs whose lease expired (their worker died,
-- hung or lost the database). Each closes its attempt as 'stalled' and counts
-- a stall; stalls have their own budget and never consume an attempt. A job
-- returns to ready while its stall count stays within max_stalled, and fails
-- outright past it (a job that keeps taking workers down should stop); the
-- worker that recovered it logs that at ERROR and calls ON_JOB_FAILURE.
-- SKIP LOCKED: any number of workers may sweep at once without waiting.
-- Recovery is time-based, so a handler that was merely paused past its lease
-- may run twice; its late writes are refused by the fence.
-- A job an operator asked to cancel (cancel_requested) whose worker died
-- before it acked is not put back in line: it ends 'canceled' (canceled =
-- true), its attempt closed as 'stalled', its envelope carrying the reason
-- of the latest cancel request as the worker's ack would. Blocked dependents of the jobs
-- that ended failed or canceled are settled in the same transaction
-- (workhorse_settle_dependents_v1).
CREATE OR REPLACE FUNCTION workhorse_recover_stalled_v1(p_limit integer DEFAULT 1000)
RETURNS TABLE (job_id bigint, queue text, attempt integer, stall_count integer, failed boolean,
               name text, max_attempts integer, max_stalled integer, canceled boolean)
-- Index paths whatever the statistics say, for the life of a session's
-- cached plans (docs/sql.md, "Plans that do not depend on statistics").
LANGUAGE plpgsql SET enable_seqscan = off AS $$
-- PL/pgSQL, not LANGUAGE sql: PostgreSQL caches a PL/pgSQL statement's plan
-- for the session, while a SQL function's body is planned on every call.
#variable_conflict use_column
DECLARE
    v_ids      bigint[];
    v_queues   text[];
    v_attempts integer[];
    v_stalls   integer[];
    v_failed   boolean[];
    v_names    text[];
    v_max      integer[];
    v_max_st   integer[];
    v_canceled boolean[];
    v_n        integer;
    -- the jobs back in line
    v_r_ids      bigint[];
    v_r_attempts integer[];
    v_r_workers  text[];
    v_r_started  timestamptz[];
    v_r_errors   jsonb[];
    v_r_data     jsonb[];
    -- the jobs that end
    v_e_ids      bigint[];
    v_e_states   text[];
    v_e_errors   jsonb[];
    v_e_att_err  jsonb[];
    v_e_data     jsonb[];
    v_live       text[];
    -- The database's clock when the sweep begins its work, not its
    -- transaction's start (DESIGN.md principle 5): a sweep that waited on a
    -- lock judges the leases by the time it judges them.
    v_now        timestamptz := clock_timestamp();
BEGIN
    IF p_limit IS NULL OR p_limit < 0 THEN
        RAISE EXCEPTION 'workhorse_recover_stalled_v1: p_limit must be 0 or more, got %',
            p_limit USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Most sweeps find no lease run out: they read no more than the index.
    IF NOT EXISTS (SELECT 1 FROM workhorse_job_runtime rt
                   WHERE rt.state = 'active' AND rt.lease_expires_at < v_now) THEN
        RETURN;
    END IF;
    v_now := clock_timestamp();  -- after any wait for the table above
    v_live := workhorse_live_workers_v1();
    WITH expired AS (
        SELECT rt.job_id, rt.queue, rt.attempt, rt.stall_count, rt.stall_count + 1 AS stalls,
               rt.worker_id, rt.attempt_started_at, rt.lease_expires_at,
               rt.stall_count + 1 > j.max_stalled AND NOT rt.cancel_requested AS give_up,
               rt.cancel_requested AS canceled,
               j.name, j.max_attempts, j.max_stalled
        FROM workhorse_job_runtime rt
        JOIN workhorse_job j ON j.id = rt.job_id
        WHERE rt.state = 'active' AND rt.lease_expires_at < v_now
          AND NOT workhorse_worker_key_v1(rt.worker_id) = ANY (v_live)
        ORDER BY rt.lease_expires_at
        LIMIT p_limit
        FOR UPDATE OF rt SKIP LOCKED
    ),
    judged AS (
        SELECT e.*,
               jsonb_build_object('type', 'LeaseExpired',
                                  'message', 'the lease expired at ' || e.lease_expires_at
                                             || ' without a heartbeat') AS attempt_error,
               CASE WHEN e.canceled THEN jsonb_build_object(
                   'type', 'django_workhorse.exceptions.JobCancelled', 'state_before', 'active',
                   'message', 'canceled by an operator; its worker stopped renewing the lease '
                              'before it stopped the job')
                   -- The operator's reason, who asked and when, as the
                   -- worker's ack carries them (workhorse_fail_many_v1).
                   || jsonb_strip_nulls(jsonb_build_object(
                          'reason', q.data->'reason', 'by', q.data->'by', 'at', q.at))
               WHEN e.give_up THEN jsonb_build_object(
                   'type', 'django_workhorse.exceptions.StalledJobError',
                   'message', format('the job stalled %s times (max_stalled is %s): its worker '
                                     'stopped renewing the lease', e.stalls, e.max_stalled))
               END AS error
        FROM expired e
        -- For a canceled job only (the rare case): its latest request.
        LEFT JOIN LATERAL (
            SELECT ev.data, ev.at FROM workhorse_job_event ev
            WHERE e.canceled AND ev.job_id = e.job_id AND ev.kind = 'cancel_requested'
            ORDER BY ev.at DESC, ev.id DESC LIMIT 1
        ) q ON true
    )
    SELECT array_agg(e.job_id),
           array_agg(e.queue),
           array_agg(e.attempt),
           array_agg(e.stalls),
           array_agg(e.give_up),
           array_agg(e.name),
           array_agg(e.max_attempts),
           array_agg(e.max_stalled),
           array_agg(e.canceled),
           array_agg(e.job_id) FILTER (WHERE NOT (e.give_up OR e.canceled)),
           array_agg(e.attempt) FILTER (WHERE NOT (e.give_up OR e.canceled)),
           array_agg(e.worker_id) FILTER (WHERE NOT (e.give_up OR e.canceled)),
           array_agg(e.attempt_started_at)
               FILTER (WHERE NOT (e.give_up OR e.canceled)),
           array_agg(e.attempt_error)
               FILTER (WHERE NOT (e.give_up OR e.canceled)),
           array_agg(jsonb_build_object('stall_count', e.stalls))
               FILTER (WHERE NOT (e.give_up OR e.canceled)),
           array_agg(e.job_id) FILTER (WHERE e.give_up OR e.canceled),
           array_agg(CASE WHEN e.canceled THEN 'canceled' ELSE 'failed' END)
               FILTER (WHERE e.give_up OR e.canceled),
           array_agg(e.error) FILTER (WHERE e.give_up OR e.canceled),
           array_agg(e.attempt_error) FILTER (WHERE e.give_up OR e.canceled),
           array_agg(jsonb_build_object('stall_count', e.stalls))
               FILTER (WHERE e.give_up OR e.canceled)
    INTO v_ids, v_queues, v_attempts, v_stalls, v_failed, v_names, v_max, v_max_st, v_canceled,
         v_r_ids, v_r_attempts, v_r_workers, v_r_started, v_r_errors, v_r_data,
         v_e_ids, v_e_states, v_e_errors, v_e_att_err, v_e_data
    FROM judged e;
    -- Ready again with its place in line, the attempt given back and closed
    -- as 'stalled', the stall counted, a 'stalled' event
    -- (workhorse_requeue_runs_v1).
    v_n := coalesce(cardinality(v_r_ids), 0);
    IF v_n > 0 THEN
        PERFORM workhorse_requeue_runs_v1(
            v_r_ids, v_r_attempts, v_r_workers, v_r_started, NULL, true,
            array_fill('stalled'::text, ARRAY[v_n]), v_r_errors,
            array_fill('stalled'::text, ARRAY[v_n]), v_r_data);
    END IF;
    -- Failed past max_stalled, or canceled: the outcome, the attempt closed
    -- as 'stalled', the event, limited queues woken and the dependents
    -- settled (workhorse_end_runs_v1).
    v_n := coalesce(cardinality(v_e_ids), 0);
    IF v_n > 0 THEN
        PERFORM workhorse_end_runs_v1(
            v_e_ids, NULL, NULL, v_e_states, NULL, v_e_errors,
            array_fill('stalled'::text, ARRAY[v_n]), v_e_att_err, v_e_data);
    END IF;
    RETURN QUERY
    SELECT * FROM unnest(v_ids, v_queues, v_attempts, v_stalls, v_failed, v_names, v_max,
                         v_max_st, v_canceled);
END;
$$;
