-- Enqueues one job without prerequisites: the psql-friendly form, and the
-- path Python takes for a single job (enqueue() without depends_on).
-- An option left NULL takes its default from workhorse_job_defaults_v1().
-- Returns the job id and whether a new job was inserted (false: an existing
-- job holds the idempotency key). Runs inside the caller's transaction: a
-- rollback removes every row, and the wake-up NOTIFY is delivered on commit.
--
-- It does what workhorse_enqueue_many_v1 does for a one-job batch, from typed
-- arguments: no JSON array to build, decode and scan, no jsonpath checks, no
-- join back to the input. Its server time is about 0.22-0.33 ms where the
-- one-job batch takes 0.46-0.49 ms (pgbench, one client, synchronous_commit
-- off, in turns; docs/decisions.md, "One job, typed arguments").
CREATE OR REPLACE FUNCTION workhorse_enqueue_v1(
    p_name text,
    p_queue text DEFAULT NULL,
    p_payload jsonb DEFAULT '{}',
    p_max_attempts integer DEFAULT NULL,
    p_priority integer DEFAULT NULL,
    p_delay double precision DEFAULT NULL,
    p_run_at timestamptz DEFAULT NULL,
    p_idempotency_key text DEFAULT NULL,
    p_timeout double precision DEFAULT NULL,
    p_backoff jsonb DEFAULT NULL,
    p_max_stalled integer DEFAULT NULL,
    p_trace_context jsonb DEFAULT NULL
) RETURNS TABLE (job_id bigint, inserted boolean)
-- Index paths whatever the statistics say (docs/sql.md, "Plans that do not
-- depend on statistics"): the idempotency look-up below.
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    v_due   timestamptz;
    v_id    bigint;
    v_queue text;
BEGIN
    -- The duration ranges of django_workhorse/limits.py, as in
    -- workhorse_enqueue_many_v1: beyond them make_interval overflows
    -- (silently, to a negative interval). NaN is above every number, so it is
    -- refused too.
    IF p_delay IS NOT NULL AND NOT (p_delay BETWEEN 0 AND 3155760000)
       OR p_timeout IS NOT NULL AND NOT (p_timeout BETWEEN 0.000001 AND 3155760000) THEN
        RAISE EXCEPTION 'workhorse_enqueue_v1: the job has delay % and timeout %',
            coalesce(p_delay::text, 'null'), coalesce(p_timeout::text, 'null')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'delay must be from 0 to 3155760000 seconds (100 years), timeout from '
                         '0.000001 to 3155760000 seconds';
    END IF;
    v_due := CASE WHEN p_run_at IS NOT NULL THEN p_run_at
                  WHEN p_delay IS NOT NULL THEN now() + make_interval(secs => p_delay)
                  ELSE now() END;

    WITH new_job AS (
        INSERT INTO workhorse_job AS j (name, queue, payload, max_attempts, priority, timeout,
                                        backoff, max_stalled, idempotency_key, trace_context,
                                        first_due_at)
        -- Defaults fold to constants when the statement is planned.
        VALUES (p_name, coalesce(p_queue, workhorse_job_defaults_v1() ->> 'queue'), p_payload,
                coalesce(p_max_attempts,
                         (workhorse_job_defaults_v1() ->> 'max_attempts')::integer),
                coalesce(p_priority, (workhorse_job_defaults_v1() ->> 'priority')::integer),
                make_interval(secs => coalesce(
                    p_timeout, (workhorse_job_defaults_v1() ->> 'timeout')::double precision)),
                -- The default policy is stored as NULL (tables_v1.sql).
                nullif(p_backoff, workhorse_job_defaults_v1() -> 'backoff'),
                coalesce(p_max_stalled,
                         (workhorse_job_defaults_v1() ->> 'max_stalled')::integer),
                p_idempotency_key, p_trace_context, nullif(v_due, now()))
        ON CONFLICT (name, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING j.id, j.queue, j.name, j.priority, j.created_at
    ),
    live AS (
        INSERT INTO workhorse_job_runtime (job_id, queue, priority, state, run_at)
        SELECT n.id, n.queue, n.priority,
               CASE WHEN v_due > now() THEN 'scheduled' ELSE 'ready' END, v_due
        FROM new_job n
    ),
    projected AS (
        INSERT INTO workhorse_job_query (job_id, queue, name, created_at)
        SELECT n.id, n.queue, n.name, n.created_at FROM new_job n
    )
    -- No 'enqueued' event: the timeline reads it from the job row.
    SELECT n.id, n.queue INTO v_id, v_queue FROM new_job n;

    IF v_id IS NOT NULL THEN
        -- Ready work wakes takers now; scheduled work tells them when to look
        -- again (epoch seconds), as workhorse_enqueue_many_v1 does.
        PERFORM pg_notify('workhorse:' || v_queue,
                          CASE WHEN v_due > now() THEN extract(epoch FROM v_due)::text
                               ELSE '' END);
        RETURN QUERY SELECT v_id, true;
        RETURN;
    END IF;

    -- The key is held. A new statement (READ COMMITTED) also sees a job that
    -- a concurrent transaction committed while the insert waited on it.
    RETURN QUERY
    SELECT j.id, false FROM workhorse_job j
    WHERE j.name = p_name AND j.idempotency_key = p_idempotency_key
    LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'workhorse_enqueue_v1: job % collided on an idempotency key held by a '
            'transaction this one cannot see (isolation above READ COMMITTED?); retry the '
            'enqueue', p_name USING ERRCODE = 'serialization_failure';
    END IF;
END;
$$;
