-- Internal: the one home of the runtime → outcome move. Every function that
-- ends jobs (succeed, fail, stall recovery, cancel, dependency settlement)
-- calls it, saying how each job ends:
--     p_job_ids          the jobs
--     p_fences, p_worker when p_worker is given, a job ends only while
--                        p_worker holds it under p_fences[i] (succeed_many's
--                        owner check); otherwise the caller has found and
--                        locked the rows itself, and p_fences may be NULL
--     p_states           'succeeded', 'failed' or 'canceled'
--     p_results          the outcome's result (NULL: all NULL)
--     p_errors           the outcome's error envelope (NULL: all NULL)
--     p_attempt_outcomes how the running attempt closes in attempt_history;
--                        NULL for a job that was not running (no attempt row)
--     p_attempt_errors   the closing attempt's error (NULL: all NULL)
--     p_event_data       the data of the event (NULL: all NULL)
-- Arrays are 1-based (as array_agg and array_fill make them) and as long as
-- p_job_ids, or NULL where the values are all NULL.
--
-- One statement locks the runtime rows (a primary-key probe each, in
-- job_id order, as every function that locks several runtime rows does:
-- docs/sql.md), deletes them and inserts the outcomes (a job never has both
-- rows, or neither) with the attempts and stall count of the runtime row;
-- each closing attempt gets its history row and each job an event named by
-- its end state, both under the row's worker_id (the run's worker; none for
-- a job that was waiting), except a run's plain success, whose event the
-- timeline derives from its attempt row; a queue whose running job ended is
-- notified when a claim was held back by its concurrency limit (the place
-- it freed); each queue's counter of jobs finished this minute, and of a
-- failure's name and error type this hour, goes up (queue_counts_v1.sql).
-- A 'stalled' close counts the
-- stall in the outcome, as workhorse_requeue_runs_v1 counts it in the
-- runtime row. Then, unless p_settle is false (the settlement's own
-- cascade, which loops instead), the blocked dependents of the jobs that
-- ended are settled (workhorse_settle_dependents_v1), in a later statement
-- so that it sees the outcomes.
--
-- Returns whether each job ended, in input order: false for a job not held
-- by p_worker under that fence (a lost lease; nothing about it changed).
--
-- The lock is taken here, in the statement that ends the rows, so that
-- succeed_many stays one statement over its batch, as it was before this
-- function existed. A caller that has locked its rows already (to decide
-- which end) pays a second probe per row, which finds its own lock: about
-- 0.2 ms per 100 rows, on the failure, recovery and cancel paths only.
CREATE OR REPLACE FUNCTION workhorse_end_runs_v1(
    p_job_ids bigint[],
    p_fences bigint[],
    p_worker text,
    p_states text[],
    p_results jsonb[],
    p_errors jsonb[],
    p_attempt_outcomes text[],
    p_attempt_errors jsonb[],
    p_event_data jsonb[],
    p_settle boolean DEFAULT true
) RETURNS boolean[]
LANGUAGE plpgsql AS $$
-- PL/pgSQL, not LANGUAGE sql: PostgreSQL caches a PL/pgSQL statement's plan
-- for the session, while a SQL function's body is planned on every call.
#variable_conflict use_column
DECLARE
    v_n     integer := coalesce(cardinality(p_job_ids), 0);
    v_ok    boolean[];
    v_ended bigint[];
    v_freed text[];
BEGIN
    IF v_n = 0 THEN
        RETURN '{}';
    END IF;
    IF cardinality(p_states) IS DISTINCT FROM v_n OR cardinality(p_fences) <> v_n
       OR p_worker IS NOT NULL AND p_fences IS NULL
       OR cardinality(p_results) <> v_n OR cardinality(p_errors) <> v_n
       OR cardinality(p_attempt_outcomes) <> v_n OR cardinality(p_attempt_errors) <> v_n
       OR cardinality(p_event_data) <> v_n THEN
        RAISE EXCEPTION 'workhorse_end_runs_v1: the arrays for % jobs differ in length', v_n
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The caller's values are read by subscript at each job's position:
    -- PL/pgSQL holds array arguments expanded, so each is one lookup (an
    -- unnest of all the arrays materializes every one: 270 us against 29 us
    -- for 100 rows). The positions come from unnest ... WITH ORDINALITY, not
    -- generate_series(1, n): with n known, every custom plan estimated
    -- generate_series exactly and the generic plan at 1,000 rows, so
    -- PostgreSQL kept planning this statement afresh on every call (+0.4 ms
    -- a 100-job success).
    WITH input AS (
        SELECT u.job_id, u.i FROM unnest(p_job_ids) WITH ORDINALITY AS u(job_id, i)
        ORDER BY u.job_id
    ),
    owned AS (
        SELECT i.i, i.job_id, r.job_id IS NOT NULL AS ok, r.queue, r.attempt, r.stall_count,
               r.worker_id, r.attempt_started_at, p_attempt_outcomes[i.i] AS attempt_outcome
        FROM input i
        LEFT JOIN LATERAL (
            SELECT rt.job_id, rt.queue, rt.attempt, rt.stall_count, rt.worker_id,
                   rt.attempt_started_at
            FROM workhorse_job_runtime rt
            WHERE rt.job_id = i.job_id
              AND (p_worker IS NULL OR rt.fence = p_fences[i.i] AND rt.worker_id = p_worker)
            FOR UPDATE
        ) r ON true
    ),
    done AS (
        DELETE FROM workhorse_job_runtime rt
        WHERE rt.job_id = ANY (ARRAY(SELECT o.job_id FROM owned o WHERE o.ok))
    ),
    outcome AS (
        INSERT INTO workhorse_job_outcome
            (job_id, state, result, error, attempts, stall_count, finished_at)
        SELECT o.job_id, p_states[o.i], p_results[o.i], p_errors[o.i], o.attempt,
               o.stall_count + CASE WHEN o.attempt_outcome = 'stalled' THEN 1 ELSE 0 END, now()
        FROM owned o WHERE o.ok
    ),
    history AS (
        INSERT INTO workhorse_attempt_history
            (job_id, attempt, outcome, worker_id, started_at, finished_at, error)
        SELECT o.job_id, o.attempt, o.attempt_outcome, o.worker_id, o.attempt_started_at, now(),
               p_attempt_errors[o.i]
        FROM owned o WHERE o.ok AND o.attempt_outcome IS NOT NULL
    ),
    evented AS (
        INSERT INTO workhorse_job_event (job_id, kind, attempt, worker_id, data)
        SELECT o.job_id, p_states[o.i], o.attempt, o.worker_id, p_event_data[o.i]
        FROM owned o
        -- A run's plain success is its 'succeeded' attempt row, from which
        -- the timeline shows the event; only an end with data is written.
        WHERE o.ok AND NOT (p_states[o.i] = 'succeeded' AND o.attempt_outcome = 'succeeded'
                            AND p_event_data[o.i] IS NULL)
    ),
    -- The dashboard's counters (queue_counts_v1.sql): one upsert per queue
    -- of the batch, in queue order so that two batches lock shared rows in
    -- the same order.
    counted AS (
        INSERT INTO workhorse_queue_minute AS m (minute, queue, shard, succeeded, failed, canceled)
        SELECT date_trunc('minute', now()), o.queue, pg_backend_pid() % 16,
               count(*) FILTER (WHERE p_states[o.i] = 'succeeded'),
               count(*) FILTER (WHERE p_states[o.i] = 'failed'),
               count(*) FILTER (WHERE p_states[o.i] = 'canceled')
        FROM owned o WHERE o.ok
        GROUP BY o.queue ORDER BY o.queue
        ON CONFLICT (minute, queue, shard) DO UPDATE
        SET succeeded = m.succeeded + excluded.succeeded,
            failed = m.failed + excluded.failed,
            canceled = m.canceled + excluded.canceled
    )
    SELECT array_agg(o.ok ORDER BY o.i), array_agg(o.job_id) FILTER (WHERE o.ok),
           (SELECT array_agg(wq.name) FROM workhorse_queue wq
            WHERE wq.concurrency_limit IS NOT NULL
              AND wq.name IN (SELECT o2.queue FROM owned o2
                              WHERE o2.ok AND o2.attempt_outcome IS NOT NULL))
    INTO v_ok, v_ended, v_freed
    FROM owned o;
    IF v_freed IS NOT NULL THEN
        -- A running job that ended freed a place in its queue: wake the
        -- workers of a queue whose claim was held back by its concurrency
        -- limit (docs/worker.md, "Queue limits"). A statement of its own,
        -- after the runtime rows were locked above, so that it reads the
        -- flag as committed by a claim that ran meanwhile (one that counted
        -- these jobs as active); a claim that set it after this read still
        -- sees these jobs end (workhorse_next_run_at_v1 waits for them).
        -- An unlimited queue pays only the probe above, in the statement that
        -- ends the jobs (as before the mark existed); a limited queue nobody
        -- waits on, one probe of its row here. A limit set while this finish
        -- was in flight is not seen; the limit change's own NOTIFY and the
        -- worker's poll cover that instant.
        WITH woken AS (
            UPDATE workhorse_queue wq SET held_back = false
            WHERE wq.name = ANY (v_freed) AND wq.held_back
            RETURNING wq.name
        )
        SELECT count(pg_notify('workhorse:' || w.name, '')) INTO v_n FROM woken w;
    END IF;
    IF 'failed' = ANY (p_states) THEN
        -- Failures by hour, name and error type, for the failures view
        -- (queue_counts_v1.sql): a statement of its own, run only when a job
        -- of the call failed, so that a batch of successes pays nothing for
        -- it; a failed job pays one probe of its identity row for the name.
        INSERT INTO workhorse_failure_hour AS f
            (hour, name, error_type, shard, failures, last_job_id, last_at)
        SELECT date_trunc('hour', now()), j.name,
               left(coalesce(u.error ->> 'type', 'unknown'), 200), pg_backend_pid() % 16,
               count(*), max(u.job_id), now()
        -- (unnest pads a NULL p_errors with NULLs)
        FROM unnest(p_job_ids, p_states, p_errors, v_ok) AS u(job_id, state, error, ok)
        JOIN workhorse_job j ON j.id = u.job_id
        WHERE u.ok AND u.state = 'failed'
        GROUP BY 2, 3 ORDER BY 2, 3
        ON CONFLICT (hour, name, error_type, shard) DO UPDATE
        SET failures = f.failures + excluded.failures,
            last_job_id = greatest(f.last_job_id, excluded.last_job_id),
            last_at = excluded.last_at;
    END IF;
    IF p_settle THEN
        -- A later statement than the one that wrote the outcomes, so it sees them.
        PERFORM workhorse_settle_dependents_v1(v_ended);
    END IF;
    RETURN v_ok;
END;
$$;
