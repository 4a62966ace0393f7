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
-- true), its attempt closed as 'stalled'. Blocked dependents of the jobs
-- that ended failed or canceled are settled in the same transaction
-- (workhorse_settle_dependents_v1).
CREATE OR REPLACE FUNCTION workhorse_recover_stalled_v1(p_limit integer DEFAULT 1000)
RETURNS TABLE (job_id bigint, queue text, attempt integer, stall_count integer, failed boolean,
               name text, max_attempts integer, max_stalled integer, canceled boolean)
LANGUAGE plpgsql AS $$
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
    v_ended    bigint[];
BEGIN
    WITH expired AS (
        SELECT rt.job_id, rt.queue, rt.attempt, rt.stall_count + 1 AS stall_count,
               rt.worker_id, rt.attempt_started_at, rt.lease_expires_at,
               rt.stall_count + 1 > j.max_stalled AND NOT rt.cancel_requested AS give_up,
               rt.cancel_requested AS canceled,
               j.name, j.max_attempts, j.max_stalled
        FROM workhorse_job_runtime rt
        JOIN workhorse_job j ON j.id = rt.job_id
        WHERE rt.state = 'active' AND rt.lease_expires_at < now()
        ORDER BY rt.lease_expires_at
        LIMIT p_limit
        FOR UPDATE OF rt SKIP LOCKED
    ),
    requeued AS (
        UPDATE workhorse_job_runtime rt
        SET state = 'ready', attempt = rt.attempt - 1, stall_count = e.stall_count,
            worker_id = NULL, lease_expires_at = NULL, attempt_started_at = NULL
        FROM expired e
        WHERE rt.job_id = e.job_id AND NOT e.give_up AND NOT e.canceled
        RETURNING rt.job_id
    ),
    ended AS (
        DELETE FROM workhorse_job_runtime rt USING expired e
        WHERE rt.job_id = e.job_id AND (e.give_up OR e.canceled)
        RETURNING rt.job_id, e.attempt, e.stall_count
    ),
    outcome AS (
        INSERT INTO workhorse_job_outcome (job_id, state, error, attempts, stall_count, finished_at)
        SELECT e.job_id, CASE WHEN e.canceled THEN 'canceled' ELSE 'failed' END,
               CASE WHEN e.canceled THEN jsonb_build_object(
                   'type', 'JobCancelled', 'state_before', 'active',
                   'message', 'canceled by an operator; its worker stopped renewing the lease '
                              'before it stopped the job')
               ELSE jsonb_build_object(
                   'type', 'StalledJobError',
                   'message', format('the job stalled %s times (max_stalled is %s): its worker '
                                     'stopped renewing the lease', e.stall_count, e.max_stalled))
               END,
               e.attempt, e.stall_count, now()
        FROM ended n JOIN expired e ON e.job_id = n.job_id
    ),
    history AS (
        INSERT INTO workhorse_attempt_history
            (job_id, attempt, outcome, worker_id, started_at, finished_at, error)
        SELECT e.job_id, e.attempt, 'stalled', e.worker_id, e.attempt_started_at, now(),
               jsonb_build_object('type', 'LeaseExpired',
                                  'message', 'the lease expired at ' || e.lease_expires_at
                                             || ' without a heartbeat')
        FROM expired e
    ),
    evented AS (
        INSERT INTO workhorse_job_event (job_id, kind, attempt, worker_id, data)
        SELECT e.job_id, CASE WHEN e.canceled THEN 'canceled'
                              WHEN e.give_up THEN 'failed' ELSE 'stalled' END,
               e.attempt, e.worker_id,
               jsonb_build_object('stall_count', e.stall_count)
        FROM expired e
    ),
    -- Every recovered job frees a place in its queue (a concurrency limit
    -- counts active jobs) and most are ready again: wake the queue's workers.
    woken AS (
        SELECT pg_notify('workhorse:' || e.queue, '') FROM expired e GROUP BY e.queue
    )
    SELECT array_agg(e.job_id), array_agg(e.queue), array_agg(e.attempt),
           array_agg(e.stall_count), array_agg(e.give_up), array_agg(e.name),
           array_agg(e.max_attempts), array_agg(e.max_stalled), array_agg(e.canceled),
           array_agg(e.job_id) FILTER (WHERE e.give_up OR e.canceled)
    INTO v_ids, v_queues, v_attempts, v_stalls, v_failed, v_names, v_max, v_max_st,
         v_canceled, v_ended
    FROM expired e CROSS JOIN (SELECT count(*) FROM woken) w;
    -- A later statement than the one that wrote the outcomes, so it sees them.
    PERFORM workhorse_settle_dependents_v1(v_ended);
    RETURN QUERY
    SELECT * FROM unnest(v_ids, v_queues, v_attempts, v_stalls, v_failed, v_names, v_max,
                         v_max_st, v_canceled);
END;
$$;
