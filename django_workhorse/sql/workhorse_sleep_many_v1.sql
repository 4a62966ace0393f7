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
LANGUAGE plpgsql AS $$
-- PL/pgSQL, not LANGUAGE sql: PostgreSQL caches a PL/pgSQL statement's plan
-- for the session, while a SQL function's body is planned on every call.
#variable_conflict use_column
DECLARE
    v_twice         bigint;
    v_bad           bigint;
    v_cancel_ids    bigint[];
    v_cancel_fences bigint[];
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
    -- A job named twice would close one attempt twice: refused, never
    -- applied twice (docs/decisions.md).
    IF cardinality(p_job_ids) > 1 THEN
        SELECT u.id INTO v_twice FROM unnest(p_job_ids) AS u(id)
        GROUP BY u.id HAVING count(*) > 1 LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'workhorse_sleep_many_v1: job % is named more than once; name each job once per call',
                v_twice USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;
    -- Each sleep needs a wake time or a delay of 0 to 100 years (limits.py).
    SELECT i.id INTO v_bad
    FROM unnest(p_job_ids, p_wake_ats, p_delays) AS i(id, wake_at, delay)
    WHERE i.wake_at IS NULL AND (i.delay IS NULL OR NOT i.delay BETWEEN 0 AND 3155760000)
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'workhorse_sleep_many_v1: job % needs a wake time or a delay of 0 to 3155760000 seconds',
            v_bad USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Lock the owned rows first (in job_id order, as everywhere), so that a
    -- cancel cannot be requested between reading the flag and the sleep.
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
            array_fill('{"type": "JobCancelled", "message": "canceled by an operator as it went to sleep"}'::jsonb,
                       ARRAY[cardinality(v_cancel_ids)]),
            array_fill('canceled'::text, ARRAY[cardinality(v_cancel_ids)]),
            array_fill(false, ARRAY[cardinality(v_cancel_ids)]),
            NULL);
    END IF;
    RETURN QUERY
    WITH input AS (
        SELECT i.job_id, i.fence, i.name, i.ord,
               coalesce(i.wake_at, now() + make_interval(secs => i.delay)) AS wake_at
        FROM unnest(p_job_ids, p_fences, p_names, p_wake_ats, p_delays) WITH ORDINALITY
            AS i(job_id, fence, name, wake_at, delay, ord)
        ORDER BY i.job_id
    ),
    -- The owner lookup of succeed_many: a locking primary-key probe per
    -- input row, in job_id order (docs/sql.md).
    owned AS (
        SELECT i.job_id, i.ord, i.name, i.wake_at, r.job_id IS NOT NULL AS ok,
               r.queue, r.attempt, r.attempt_started_at
        FROM input i
        LEFT JOIN LATERAL (
            SELECT rt.job_id, rt.queue, rt.attempt, rt.attempt_started_at
            FROM workhorse_job_runtime rt
            WHERE rt.job_id = i.job_id AND rt.fence = i.fence AND rt.worker_id = p_worker
            FOR UPDATE
        ) r ON true
    ),
    slept AS (
        UPDATE workhorse_job_runtime rt
        SET state = CASE WHEN o.wake_at > now() THEN 'scheduled' ELSE 'ready' END,
            run_at = o.wake_at, attempt = rt.attempt - 1,
            worker_id = NULL, lease_expires_at = NULL, attempt_started_at = NULL
        FROM owned o
        WHERE rt.job_id = ANY (ARRAY(SELECT o2.job_id FROM owned o2 WHERE o2.ok))
          AND o.job_id = rt.job_id
    ),
    marked AS (
        INSERT INTO workhorse_job_checkpoint AS c (job_id, name, kind, result, written_at, attempt)
        SELECT o.job_id, o.name, 'sleep', jsonb_build_object('wake_at', o.wake_at), now(), o.attempt
        FROM owned o WHERE o.ok
        ON CONFLICT (job_id, name) DO UPDATE
            SET kind = 'sleep', result = EXCLUDED.result,
                written_at = EXCLUDED.written_at, attempt = EXCLUDED.attempt
    ),
    history AS (
        INSERT INTO workhorse_attempt_history (job_id, attempt, outcome, worker_id, started_at, finished_at)
        SELECT o.job_id, o.attempt, 'slept', p_worker, o.attempt_started_at, now()
        FROM owned o WHERE o.ok
    ),
    evented AS (
        INSERT INTO workhorse_job_event (job_id, kind, attempt, worker_id, data)
        SELECT o.job_id, 'slept', o.attempt, p_worker,
               jsonb_build_object('name', o.name, 'run_at', o.wake_at)
        FROM owned o WHERE o.ok
    ),
    -- As enqueue does: a job awake at once wakes takers now; a sleeping one
    -- tells them when to look again (epoch seconds of the earliest wake).
    woken AS (
        SELECT pg_notify('workhorse:' || o.queue,
                         CASE WHEN bool_or(o.wake_at <= now()) THEN ''
                              ELSE extract(epoch FROM min(o.wake_at))::text END)
        FROM owned o WHERE o.ok GROUP BY o.queue
    )
    SELECT o.job_id, o.ok OR o.job_id = ANY (v_cancel_ids), CASE WHEN o.ok THEN o.wake_at END,
           o.job_id = ANY (v_cancel_ids)
    FROM owned o
    CROSS JOIN (SELECT count(*) FROM woken) w
    ORDER BY o.ord;
END;
$$;
