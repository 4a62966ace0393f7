-- Internal: the one home of the runtime → outcome move. Every function that
-- ends jobs (succeed, fail, stall recovery, cancel, dependency settlement)
-- calls it on runtime rows it has already locked, in job_id order, passing
-- what it read from them and how each ends:
--     p_job_ids          the jobs, ascending
--     p_queues, p_attempts, p_stall_counts, p_workers, p_started_ats
--                        their runtime row's queue, attempt, stall_count,
--                        worker_id and attempt_started_at as read (worker and
--                        start are NULL for a job that was not running)
--     p_states           'succeeded', 'failed' or 'canceled'
--     p_results          the outcome's result (NULL: all NULL)
--     p_errors           the outcome's error envelope (NULL: all NULL)
--     p_attempt_outcomes how the running attempt closes in attempt_history;
--                        NULL for a job that was not running (no attempt row)
--     p_attempt_errors   the closing attempt's error (NULL: all NULL)
--     p_event_data       the data of the event (NULL: all NULL)
-- In one statement the runtime rows are deleted and the outcome rows
-- inserted (a job never has both rows, or neither), each closing
-- attempt gets its history row, each job an event named by its end state
-- with the run's worker, and a queue with a concurrency limit whose running
-- job ended is notified (the place it freed). A 'stalled' close counts the
-- stall in the outcome's stall_count, as workhorse_requeue_runs_v1 counts
-- it in the runtime row. Then, unless p_settle is false (the settlement's
-- own cascade, which loops instead), the blocked dependents of the jobs are
-- settled (workhorse_settle_dependents_v1), in a later statement so that it
-- sees the outcomes.
--
-- The values travel as arrays read by the caller's own locking probe rather
-- than being read again here: a second probe per row would cost the success
-- of a batch as much again as its owner lookup, and joining the deleted rows
-- back to the arrays is the CTE-to-CTE join docs/sql.md rules out.
CREATE OR REPLACE FUNCTION workhorse_end_runs_v1(
    p_job_ids bigint[],
    p_queues text[],
    p_attempts integer[],
    p_stall_counts integer[],
    p_workers text[],
    p_started_ats timestamptz[],
    p_states text[],
    p_results jsonb[],
    p_errors jsonb[],
    p_attempt_outcomes text[],
    p_attempt_errors jsonb[],
    p_event_data jsonb[],
    p_settle boolean DEFAULT true
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
    -- unnest pads a short array with NULLs: the arrays that may be left out
    -- (NULL) rely on it, and none may be cut short.
    IF cardinality(p_queues) IS DISTINCT FROM v_n OR cardinality(p_attempts) IS DISTINCT FROM v_n
       OR cardinality(p_stall_counts) IS DISTINCT FROM v_n
       OR cardinality(p_workers) IS DISTINCT FROM v_n
       OR cardinality(p_started_ats) IS DISTINCT FROM v_n
       OR cardinality(p_states) IS DISTINCT FROM v_n
       OR cardinality(p_attempt_outcomes) IS DISTINCT FROM v_n
       OR cardinality(p_results) <> v_n OR cardinality(p_errors) <> v_n
       OR cardinality(p_attempt_errors) <> v_n OR cardinality(p_event_data) <> v_n THEN
        RAISE EXCEPTION 'workhorse_end_runs_v1: the arrays for % jobs differ in length', v_n
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    WITH run AS (
        SELECT * FROM unnest(p_job_ids, p_queues, p_attempts, p_stall_counts, p_workers,
                             p_started_ats, p_states, p_results, p_errors, p_attempt_outcomes,
                             p_attempt_errors, p_event_data)
            AS r(job_id, queue, attempt, stall_count, worker_id, started_at, state, result,
                 error, attempt_outcome, attempt_error, data)
    ),
    done AS (
        DELETE FROM workhorse_job_runtime rt WHERE rt.job_id = ANY (p_job_ids)
    ),
    outcome AS (
        INSERT INTO workhorse_job_outcome
            (job_id, state, result, error, attempts, stall_count, finished_at)
        SELECT r.job_id, r.state, r.result, r.error, r.attempt,
               r.stall_count + CASE WHEN r.attempt_outcome = 'stalled' THEN 1 ELSE 0 END, now()
        FROM run r
    ),
    history AS (
        INSERT INTO workhorse_attempt_history
            (job_id, attempt, outcome, worker_id, started_at, finished_at, error)
        SELECT r.job_id, r.attempt, r.attempt_outcome, r.worker_id, r.started_at, now(),
               r.attempt_error
        FROM run r WHERE r.attempt_outcome IS NOT NULL
    ),
    evented AS (
        INSERT INTO workhorse_job_event (job_id, kind, attempt, worker_id, data)
        SELECT r.job_id, r.state, r.attempt, r.worker_id, r.data FROM run r
    ),
    -- A running job of a queue with a concurrency limit frees a place when
    -- it ends: wake the workers waiting for it (docs/worker.md, "Queue
    -- limits"). Unlimited queues pay one probe of the small queue table.
    woken AS (
        SELECT pg_notify('workhorse:' || wq.name, '') FROM workhorse_queue wq
        WHERE wq.concurrency_limit IS NOT NULL
          AND wq.name IN (SELECT r.queue FROM run r WHERE r.attempt_outcome IS NOT NULL)
    )
    SELECT count(*) INTO v_n FROM woken;
    IF p_settle THEN
        -- A later statement than the one that wrote the outcomes, so it sees them.
        PERFORM workhorse_settle_dependents_v1(p_job_ids);
    END IF;
END;
$$;
