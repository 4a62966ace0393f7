-- Records the failure of many runs in one call and decides, here and not in
-- the worker, what happens next. For each (job, fence) still active under
-- p_worker the attempt closes in attempt_history as p_kinds[i] ('failed',
-- 'timed_out' or 'canceled') with its error; then:
--   * a 'canceled' run is never retried: the runtime row becomes a 'canceled'
--     outcome whose error is p_errors[i] with the reason, who asked (by)
--     and when (at) of the operator's cancel request, if there was one (its
--     'cancel_requested' event);
--   * nor is a job whose cancel was requested (cancel_requested): a failed
--     or timed-out run that would have been retried ends it 'canceled' too
--     (its attempt closes as what it was, with its error), so a cancel that
--     raced a failure is not undone by the retry; the outcome's error is a
--     cancellation envelope (type django_workhorse.exceptions.JobCancelled,
--     a message naming the run's error, and the request's reason, by and
--     at), as on every other path that ends a job canceled;
--   * retry, when p_retryable[i] and attempts remain (attempt < max_attempts):
--     the job waits p_delays[i] seconds, or the job's backoff policy when that
--     is NULL, as 'scheduled' (or 'ready' when the delay is zero);
--   * otherwise the runtime row becomes a 'failed' outcome in this statement.
-- The worker acks a canceled run here, not in a function of its own, so that
-- whatever a failed outcome sets in motion a canceled one does too.
-- Any other id comes back with ok = false (a lost lease): nothing changes.
-- canceled says the job ended canceled; reason is then the operator's reason
-- (NULL otherwise, or when none was given).
-- Rows come back in input order. Blocked dependents of the jobs that ended
-- failed are settled in the same transaction (workhorse_settle_dependents_v1).
CREATE OR REPLACE FUNCTION workhorse_fail_many_v1(
    p_worker text,
    p_job_ids bigint[],
    p_fences bigint[],
    p_errors jsonb[],
    p_kinds text[] DEFAULT NULL,
    p_retryable boolean[] DEFAULT NULL,
    p_delays double precision[] DEFAULT NULL
) RETURNS TABLE (
    job_id bigint, ok boolean, will_retry boolean, run_at timestamptz,
    retry_in double precision, attempt integer, max_attempts integer,
    canceled boolean, reason text
)
-- Index paths whatever the statistics say, for the life of a session's
-- cached plans (docs/sql.md, "Plans that do not depend on statistics").
-- Generic plans, made once per session: with auto, PL/pgSQL planned these
-- statements afresh on every call, as the generic plan never looked cheaper
-- with enable_seqscan off (one-job claim + succeed: ~0.9 ms of server time
-- against ~0.35 forced generic; 100 at a time: ~50 against ~35 us a job).
LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
-- PL/pgSQL, not LANGUAGE sql: PostgreSQL caches a PL/pgSQL statement's plan
-- for the session, while a SQL function's body is planned on every call.
#variable_conflict use_column
DECLARE
    v_kind    text;
    v_ids     bigint[];
    v_ok      boolean[];
    v_retry   boolean[];
    v_run_at  timestamptz[];
    v_in      double precision[];
    v_attempt integer[];
    v_max     integer[];
    v_canceled boolean[];
    v_reason  text[];
    v_n       integer;
    -- the retried jobs
    v_r_ids      bigint[];
    v_r_attempts integer[];
    v_r_started  timestamptz[];
    v_r_run_ats  timestamptz[];
    v_r_kinds    text[];
    v_r_errors   jsonb[];
    v_r_data     jsonb[];
    -- the jobs that end
    v_e_ids            bigint[];
    v_e_states         text[];
    v_e_errors         jsonb[];
    v_e_kinds          text[];
    v_e_attempt_errors jsonb[];
    v_e_data           jsonb[];
BEGIN
    -- unnest would pad a short array with NULLs and lose the pairing; the
    -- optional arrays may be left out (NULL) but not cut short.
    IF cardinality(p_fences) IS DISTINCT FROM cardinality(p_job_ids)
       OR cardinality(p_errors) IS DISTINCT FROM cardinality(p_job_ids)
       OR cardinality(p_kinds) <> cardinality(p_job_ids)
       OR cardinality(p_retryable) <> cardinality(p_job_ids)
       OR cardinality(p_delays) <> cardinality(p_job_ids) THEN
        RAISE EXCEPTION 'workhorse_fail_many_v1: % ids, % fences, % errors, % kinds, '
            '% retryable flags, % delays',
            cardinality(p_job_ids), cardinality(p_fences), cardinality(p_errors),
            cardinality(p_kinds), cardinality(p_retryable), cardinality(p_delays)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- A job named twice is refused, never applied twice (docs/decisions.md).
    PERFORM workhorse_refuse_named_twice_v1('workhorse_fail_many_v1', p_job_ids);
    -- A run that did not succeed closes as failed, timed out or canceled;
    -- anything else would be a history row that says something that did not
    -- happen.
    SELECT k.kind INTO v_kind FROM unnest(p_kinds) AS k(kind)
    WHERE k.kind IS NOT NULL AND k.kind NOT IN ('failed', 'timed_out', 'canceled') LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'workhorse_fail_many_v1: unknown attempt outcome %; use failed, timed_out or canceled',
            quote_literal(v_kind) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    WITH input AS (
        SELECT i.job_id, i.fence, i.error, i.ord,
               coalesce(i.kind, 'failed') AS kind,
               coalesce(i.retryable, true) AS retryable,
               i.delay
        FROM unnest(p_job_ids, p_fences, p_errors,
                    coalesce(p_kinds, '{}'::text[]), coalesce(p_retryable, '{}'::boolean[]),
                    coalesce(p_delays, '{}'::double precision[])) WITH ORDINALITY
             AS i(job_id, fence, error, kind, retryable, delay, ord)
        WHERE i.job_id IS NOT NULL
        ORDER BY i.job_id
    ),
    -- The owner lookup of succeed_many: a locking primary-key probe per
    -- input row, in job_id order, and one into workhorse_job (docs/sql.md).
    owned AS (
        SELECT i.job_id, i.ord, r.job_id IS NOT NULL AS ok, r.queue, r.attempt, r.stall_count,
               r.attempt_started_at, j.max_attempts, i.kind, i.error,
               -- A job whose cancel was requested is never retried: a run
               -- that would have been ends canceled, whatever killed it.
               (i.retryable AND i.kind <> 'canceled' AND NOT r.cancel_requested
                AND r.attempt < j.max_attempts) AS will_retry,
               r.job_id IS NOT NULL
               AND (i.kind = 'canceled'
                    OR r.cancel_requested AND i.retryable AND r.attempt < j.max_attempts)
                   AS canceled,
               -- Never before now (a negative delay from a SQL caller): a
               -- retry queues behind the jobs waiting (workhorse_requeue_runs_v1).
               -- Nor past the 100 years of limits.py (NaN included), where
               -- the due time would leave the years a timestamp can hold;
               -- Python holds a custom delay to the same range.
               now() + make_interval(secs => least(greatest(coalesce(i.delay,
                   workhorse_backoff_delay_v1(j.backoff, r.attempt)), 0), 3155760000))
                   AS next_run_at
        FROM input i
        LEFT JOIN LATERAL (
            SELECT rt.job_id, rt.queue, rt.attempt, rt.stall_count, rt.attempt_started_at,
                   rt.cancel_requested
            FROM workhorse_job_runtime rt
            WHERE rt.job_id = i.job_id AND rt.fence = i.fence AND rt.worker_id = p_worker
            FOR UPDATE
        ) r ON true
        LEFT JOIN LATERAL (
            SELECT j.max_attempts, j.backoff FROM workhorse_job j
            WHERE j.id = r.job_id OFFSET 0
        ) j ON true
    ),
    cur AS (
        SELECT o.job_id, o.ord, o.ok, o.queue, o.attempt, o.stall_count, o.attempt_started_at,
               o.max_attempts, o.kind, o.will_retry, o.canceled, o.next_run_at,
               q.data->>'reason' AS reason, o.error AS attempt_error,
               CASE WHEN o.canceled
                    -- A run that failed or timed out first ends the job with
                    -- the cancel's envelope, like every canceled end; its
                    -- own error stays on its attempt (attempt_error).
                    THEN CASE WHEN o.kind = 'canceled' THEN o.error
                              ELSE jsonb_build_object(
                                  'type', 'django_workhorse.exceptions.JobCancelled',
                                  'message', format(
                                      'canceled by an operator; its run %s before its worker '
                                      'heard of the cancel (%s: %s)',
                                      CASE o.kind WHEN 'timed_out' THEN 'timed out'
                                                  ELSE 'failed' END,
                                      coalesce(o.error ->> 'type', 'error'),
                                      coalesce(o.error ->> 'message', '')))
                         END || jsonb_strip_nulls(jsonb_build_object(
                             'reason', q.data->'reason', 'by', q.data->'by', 'at', q.at,
                             'state_before', 'active'))
                    ELSE o.error END AS error
        FROM owned o
        -- The operator's request, for a canceled run only (the rare case).
        LEFT JOIN LATERAL (
            SELECT e.data, e.at FROM workhorse_job_event e
            WHERE o.canceled AND e.job_id = o.job_id AND e.kind = 'cancel_requested'
            ORDER BY e.at DESC, e.id DESC LIMIT 1
        ) q ON true
    )
    -- The answer in input order; each transition's rows as cur yields them
    -- (job_id order). All aggregates of one pass read the rows in the same
    -- order, so the arrays of a transition line up without a sort each.
    SELECT array_agg(c.job_id ORDER BY c.ord), array_agg(c.ok ORDER BY c.ord),
           array_agg(coalesce(c.ok AND c.will_retry, false) ORDER BY c.ord),
           array_agg(CASE WHEN c.ok AND c.will_retry THEN c.next_run_at END ORDER BY c.ord),
           array_agg(CASE WHEN c.ok AND c.will_retry
                          THEN extract(epoch FROM c.next_run_at - now())::double precision END
                     ORDER BY c.ord),
           array_agg(c.attempt ORDER BY c.ord), array_agg(c.max_attempts ORDER BY c.ord),
           array_agg(coalesce(c.canceled, false) ORDER BY c.ord),
           array_agg(c.reason ORDER BY c.ord),
           array_agg(c.job_id) FILTER (WHERE c.ok AND c.will_retry),
           array_agg(c.attempt) FILTER (WHERE c.ok AND c.will_retry),
           array_agg(c.attempt_started_at) FILTER (WHERE c.ok AND c.will_retry),
           array_agg(c.next_run_at) FILTER (WHERE c.ok AND c.will_retry),
           array_agg(c.kind) FILTER (WHERE c.ok AND c.will_retry),
           array_agg(c.attempt_error) FILTER (WHERE c.ok AND c.will_retry),
           array_agg(jsonb_build_object('attempt_outcome', c.kind, 'error', c.error,
                                        'run_at', c.next_run_at))
               FILTER (WHERE c.ok AND c.will_retry),
           array_agg(c.job_id) FILTER (WHERE c.ok AND NOT c.will_retry),
           array_agg(CASE WHEN c.canceled THEN 'canceled' ELSE 'failed' END)
               FILTER (WHERE c.ok AND NOT c.will_retry),
           array_agg(c.error) FILTER (WHERE c.ok AND NOT c.will_retry),
           array_agg(c.kind) FILTER (WHERE c.ok AND NOT c.will_retry),
           array_agg(c.attempt_error) FILTER (WHERE c.ok AND NOT c.will_retry),
           array_agg(jsonb_build_object('attempt_outcome', c.kind, 'error', c.error))
               FILTER (WHERE c.ok AND NOT c.will_retry)
    INTO v_ids, v_ok, v_retry, v_run_at, v_in, v_attempt, v_max, v_canceled, v_reason,
         v_r_ids, v_r_attempts, v_r_started, v_r_run_ats, v_r_kinds, v_r_errors, v_r_data,
         v_e_ids, v_e_states, v_e_errors, v_e_kinds, v_e_attempt_errors, v_e_data
    FROM cur c;
    -- A retry: back in line at its run_at, the attempt closed as what it
    -- was, a 'retry_scheduled' event and the wake-up (workhorse_requeue_runs_v1).
    v_n := coalesce(cardinality(v_r_ids), 0);
    IF v_n > 0 THEN
        PERFORM workhorse_requeue_runs_v1(
            v_r_ids, v_r_attempts, array_fill(p_worker, ARRAY[v_n]), v_r_started, v_r_run_ats,
            false, v_r_kinds, v_r_errors, array_fill('retry_scheduled'::text, ARRAY[v_n]),
            v_r_data);
    END IF;
    -- The end: a failed or canceled outcome, the attempt closed, a 'failed'
    -- or 'canceled' event, limited queues woken and the dependents settled
    -- (workhorse_end_runs_v1).
    v_n := coalesce(cardinality(v_e_ids), 0);
    IF v_n > 0 THEN
        PERFORM workhorse_end_runs_v1(
            v_e_ids, NULL, NULL, v_e_states, NULL, v_e_errors, v_e_kinds, v_e_attempt_errors,
            v_e_data);
    END IF;
    RETURN QUERY
    SELECT * FROM unnest(v_ids, v_ok, v_retry, v_run_at, v_in, v_attempt, v_max, v_canceled,
                         v_reason);
END;
$$;
