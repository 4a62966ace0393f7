-- Internal: the one home of the active → ready / scheduled return. Every
-- function that puts a running job back in line (a retry, a stall
-- recovery, a release, a durable sleep) calls it on active runtime rows it
-- has already locked, passing what it read from them:
--     p_job_ids          the jobs
--     p_attempts, p_workers, p_started_ats
--                        their runtime row's attempt, worker_id and
--                        attempt_started_at as read
--     p_run_ats          when each is due again; NULL keeps its run_at (its
--                        place in line) and makes it ready
--     p_give_back        the attempt is given back (attempt - 1): the run
--                        consumed none (a release, a stall, a sleep)
--     p_attempt_outcomes how the attempt closes in attempt_history; NULL for
--                        no history row (a release: the attempt never counted)
--     p_attempt_errors   the closing attempt's error (NULL: all NULL)
--     p_event_kinds      the event of each ('retry_scheduled', 'stalled',
--                        'released', 'slept'), written with the run's worker
--     p_event_data       its data (NULL: all NULL)
-- The row loses its worker, lease and start. A due time is never earlier
-- than now(): a job returned to line queues behind the jobs of its priority
-- already waiting, as one enqueued now would (a run_at in the past would put
-- it ahead of them); it is 'scheduled' while the time is in the future, else
-- 'ready'. A 'stalled' close counts the stall.
-- Each queue is notified as enqueue does: an empty payload when a job of it
-- is ready now or the queue has a concurrency limit (a place was freed),
-- else the epoch seconds of its earliest due time.
CREATE OR REPLACE FUNCTION workhorse_requeue_runs_v1(
    p_job_ids bigint[],
    p_attempts integer[],
    p_workers text[],
    p_started_ats timestamptz[],
    p_run_ats timestamptz[],
    p_give_back boolean,
    p_attempt_outcomes text[],
    p_attempt_errors jsonb[],
    p_event_kinds text[],
    p_event_data jsonb[]
) RETURNS void
LANGUAGE plpgsql AS $$
-- PL/pgSQL, not LANGUAGE sql: PostgreSQL caches a PL/pgSQL statement's plan
-- for the session, while a SQL function's body is planned on every call.
#variable_conflict use_column
DECLARE
    v_n integer := coalesce(cardinality(p_job_ids), 0);
BEGIN
    IF v_n = 0 THEN
        RETURN;
    END IF;
    -- An array that may be left out (NULL) reads as NULLs; none may be cut
    -- short. Arrays are 1-based, as array_agg and array_fill make them.
    IF cardinality(p_attempts) IS DISTINCT FROM v_n
       OR cardinality(p_workers) IS DISTINCT FROM v_n
       OR cardinality(p_started_ats) IS DISTINCT FROM v_n
       OR cardinality(p_event_kinds) IS DISTINCT FROM v_n
       OR cardinality(p_run_ats) <> v_n OR cardinality(p_attempt_outcomes) <> v_n
       OR cardinality(p_attempt_errors) <> v_n OR cardinality(p_event_data) <> v_n THEN
        RAISE EXCEPTION 'workhorse_requeue_runs_v1: the arrays for % jobs differ in length', v_n
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Elements are read by subscript at positions from unnest ... WITH
    -- ORDINALITY (workhorse_end_runs_v1 says why).
    WITH run AS (
        SELECT u.job_id, p_attempts[u.i] AS attempt, p_workers[u.i] AS worker_id,
               p_started_ats[u.i] AS started_at, p_run_ats[u.i] AS run_at,
               p_attempt_outcomes[u.i] AS attempt_outcome, p_attempt_errors[u.i] AS error,
               p_event_kinds[u.i] AS kind, p_event_data[u.i] AS data
        FROM unnest(p_job_ids) WITH ORDINALITY AS u(job_id, i)
    ),
    moved AS (
        UPDATE workhorse_job_runtime rt
        SET state = CASE WHEN r.run_at > now() THEN 'scheduled' ELSE 'ready' END,
            run_at = CASE WHEN r.run_at IS NULL THEN rt.run_at
                          ELSE greatest(r.run_at, now()) END,
            attempt = rt.attempt - CASE WHEN p_give_back THEN 1 ELSE 0 END,
            stall_count = rt.stall_count
                          + CASE WHEN r.attempt_outcome = 'stalled' THEN 1 ELSE 0 END,
            worker_id = NULL, lease_expires_at = NULL, attempt_started_at = NULL
        FROM run r
        WHERE rt.job_id = ANY (p_job_ids) AND rt.job_id = r.job_id
        RETURNING rt.queue, rt.state, rt.run_at
    ),
    history AS (
        INSERT INTO workhorse_attempt_history
            (job_id, attempt, outcome, worker_id, started_at, finished_at, error)
        SELECT r.job_id, r.attempt, r.attempt_outcome, r.worker_id, r.started_at, now(), r.error
        FROM run r WHERE r.attempt_outcome IS NOT NULL
    ),
    evented AS (
        INSERT INTO workhorse_job_event (job_id, kind, attempt, worker_id, data)
        SELECT r.job_id, r.kind, r.attempt, r.worker_id, r.data FROM run r
    ),
    -- The claim wrote no event (the timeline derives it from the attempt's
    -- history row); an attempt closed without one (a release) records its
    -- start here, at the time it was claimed.
    unrecorded AS (
        INSERT INTO workhorse_job_event (job_id, at, kind, attempt, worker_id)
        SELECT r.job_id, r.started_at, 'claimed', r.attempt, r.worker_id
        FROM run r WHERE r.attempt_outcome IS NULL AND r.started_at IS NOT NULL
    ),
    woken AS (
        SELECT pg_notify('workhorse:' || m.queue,
                         CASE WHEN bool_or(m.state = 'ready') OR EXISTS (
                                  SELECT 1 FROM workhorse_queue wq
                                  WHERE wq.name = m.queue AND wq.concurrency_limit IS NOT NULL)
                              THEN ''
                              ELSE extract(epoch FROM min(m.run_at))::text END)
        FROM moved m GROUP BY m.queue
    )
    SELECT count(*) INTO v_n FROM woken;
END;
$$;
