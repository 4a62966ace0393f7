-- Puts many running jobs to sleep in one call (ctx.sleep). For each
-- (job, fence) still active under p_worker: the sleep is recorded under its
-- name in workhorse_job_checkpoint (kind 'sleep', {"wake_at": ...}), so the
-- run after the wake-up finds it and goes on; the job returns to 'scheduled'
-- with run_at at the wake time ('ready' when that time has already come),
-- holding no worker; the attempt closes as 'slept' in attempt_history and
-- gives its number back, as a release does (a sleep consumes no attempt);
-- and a 'slept' event is written. The wake time is p_wake_ats[i] when given,
-- else now() + p_delays[i] seconds on the database clock.
-- Any other id comes back with ok = false (a lost lease) and nothing about
-- that job changes. Rows come back in input order.
--
-- A job an operator asked to cancel (cancel_requested) does not go to sleep,
-- which would leave the cancel waiting until the wake: it ends 'canceled'
-- through workhorse_fail_many_v1 (kind 'canceled'), as a release does, and
-- comes back with ok, no run_at and canceled = true.
CREATE OR REPLACE FUNCTION workhorse_sleep_many_v1(
    p_worker text,
    p_job_ids bigint[],
    p_fences bigint[],
    p_names text[],
    p_wake_ats timestamptz[],
    p_delays double precision[]
) RETURNS TABLE (job_id bigint, ok boolean, run_at timestamptz, canceled boolean)
-- Index paths whatever the statistics say, for the life of a session's
-- cached plans (docs/sql.md, "Plans that do not depend on statistics").
LANGUAGE plpgsql SET enable_seqscan = off AS $$
-- PL/pgSQL, not LANGUAGE sql: PostgreSQL caches a PL/pgSQL statement's plan
-- for the session, while a SQL function's body is planned on every call.
#variable_conflict use_column
DECLARE
    v_bad           bigint;
    v_cancel_ids    bigint[];
    v_cancel_fences bigint[];
    v_ids           bigint[];
    v_ok            boolean[];
    v_run_ats       timestamptz[];
    v_canceled      boolean[];
    v_n             integer;
    -- the jobs that go to sleep
    v_s_ids         bigint[];
    v_s_attempts    integer[];
    v_s_started     timestamptz[];
    v_s_names       text[];
    v_s_wake_ats    timestamptz[];
    v_s_data        jsonb[];
BEGIN
    -- unnest would pad a short array with NULLs and lose the pairing.
    IF cardinality(p_fences) IS DISTINCT FROM cardinality(p_job_ids)
       OR cardinality(p_names) IS DISTINCT FROM cardinality(p_job_ids)
       OR cardinality(p_wake_ats) IS DISTINCT FROM cardinality(p_job_ids)
       OR cardinality(p_delays) IS DISTINCT FROM cardinality(p_job_ids) THEN
        RAISE EXCEPTION 'workhorse_sleep_many_v1: % ids, % fences, % names, % wake times, % delays',
            cardinality(p_job_ids), cardinality(p_fences), cardinality(p_names),
            cardinality(p_wake_ats), cardinality(p_delays)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- A job named twice is refused, never applied twice (docs/decisions.md).
    PERFORM workhorse_refuse_named_twice_v1('workhorse_sleep_many_v1', p_job_ids);
    -- Each sleep needs a wake time or a delay of 0 to 100 years (limits.py).
    SELECT i.id INTO v_bad
    FROM unnest(p_job_ids, p_wake_ats, p_delays) AS i(id, wake_at, delay)
    WHERE i.wake_at IS NULL AND (i.delay IS NULL OR NOT i.delay BETWEEN 0 AND 3155760000)
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'workhorse_sleep_many_v1: job % needs a wake time or a delay of 0 to 3155760000 seconds',
            v_bad USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The owner lookup of succeed_many: a locking primary-key probe per
    -- input row, in job_id order (docs/sql.md). The cancel flag is read
    -- under the lock, so a cancel cannot be requested between reading it and
    -- the sleep.
    WITH input AS (
        SELECT i.job_id, i.fence, i.name, i.ord,
               coalesce(i.wake_at, now() + make_interval(secs => i.delay)) AS wake_at
        FROM unnest(p_job_ids, p_fences, p_names, p_wake_ats, p_delays) WITH ORDINALITY
            AS i(job_id, fence, name, wake_at, delay, ord)
        ORDER BY i.job_id
    ),
    owned AS (
        SELECT i.job_id, i.fence, i.ord, i.name, i.wake_at,
               -- Due no earlier than now (workhorse_requeue_runs_v1): a
               -- wake time already past queues at the back of its priority.
               greatest(i.wake_at, now()) AS run_at,
               r.job_id IS NOT NULL AS ok, coalesce(r.cancel_requested, false) AS cancel,
               r.attempt, r.attempt_started_at
        FROM input i
        LEFT JOIN LATERAL (
            SELECT rt.job_id, rt.cancel_requested, rt.attempt, rt.attempt_started_at
            FROM workhorse_job_runtime rt
            WHERE rt.job_id = i.job_id AND rt.fence = i.fence AND rt.worker_id = p_worker
            FOR UPDATE
        ) r ON true
    )
    SELECT array_agg(o.job_id ORDER BY o.ord), array_agg(o.ok ORDER BY o.ord),
           array_agg(CASE WHEN o.ok AND NOT o.cancel THEN o.run_at END ORDER BY o.ord),
           array_agg(o.ok AND o.cancel ORDER BY o.ord),
           coalesce(array_agg(o.job_id) FILTER (WHERE o.ok AND o.cancel), '{}'),
           coalesce(array_agg(o.fence) FILTER (WHERE o.ok AND o.cancel), '{}'),
           array_agg(o.job_id) FILTER (WHERE o.ok AND NOT o.cancel),
           array_agg(o.attempt) FILTER (WHERE o.ok AND NOT o.cancel),
           array_agg(o.attempt_started_at) FILTER (WHERE o.ok AND NOT o.cancel),
           array_agg(o.name) FILTER (WHERE o.ok AND NOT o.cancel),
           array_agg(o.wake_at) FILTER (WHERE o.ok AND NOT o.cancel),
           array_agg(jsonb_build_object('name', o.name, 'run_at', o.run_at))
               FILTER (WHERE o.ok AND NOT o.cancel)
    INTO v_ids, v_ok, v_run_ats, v_canceled, v_cancel_ids, v_cancel_fences, v_s_ids,
         v_s_attempts, v_s_started, v_s_names, v_s_wake_ats, v_s_data
    FROM owned o;
    IF cardinality(v_cancel_ids) > 0 THEN
        PERFORM workhorse_fail_many_v1(
            p_worker, v_cancel_ids, v_cancel_fences,
            array_fill('{"type": "django_workhorse.exceptions.JobCancelled", "message": "canceled by an operator as it went to sleep"}'::jsonb,
                       ARRAY[cardinality(v_cancel_ids)]),
            array_fill('canceled'::text, ARRAY[cardinality(v_cancel_ids)]),
            array_fill(false, ARRAY[cardinality(v_cancel_ids)]),
            NULL);
    END IF;
    v_n := coalesce(cardinality(v_s_ids), 0);
    IF v_n > 0 THEN
        -- The sleep, by name, with the wake time asked for: the run after
        -- the wake-up finds it and goes on.
        INSERT INTO workhorse_job_checkpoint AS c (job_id, name, kind, result, written_at, attempt)
        SELECT s.job_id, s.name, 'sleep', jsonb_build_object('wake_at', s.wake_at), now(),
               s.attempt
        FROM unnest(v_s_ids, v_s_names, v_s_wake_ats, v_s_attempts)
            AS s(job_id, name, wake_at, attempt)
        ON CONFLICT (job_id, name) DO UPDATE
            SET kind = 'sleep', result = EXCLUDED.result,
                written_at = EXCLUDED.written_at, attempt = EXCLUDED.attempt;
        -- Back in line at the wake time, the attempt given back and closed
        -- as 'slept', a 'slept' event and the wake-up: as enqueue does, a
        -- job awake at once wakes takers now, a sleeping one tells them when
        -- to look again (workhorse_requeue_runs_v1).
        PERFORM workhorse_requeue_runs_v1(
            v_s_ids, v_s_attempts, array_fill(p_worker, ARRAY[v_n]), v_s_started, v_s_wake_ats,
            true, array_fill('slept'::text, ARRAY[v_n]), NULL,
            array_fill('slept'::text, ARRAY[v_n]), v_s_data);
    END IF;
    RETURN QUERY SELECT * FROM unnest(v_ids, v_ok, v_run_ats, v_canceled);
END;
$$;
