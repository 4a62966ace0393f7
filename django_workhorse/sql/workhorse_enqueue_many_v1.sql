-- Accepts many jobs in one call. p_jobs is a JSON array of objects:
--   name, queue, payload (object)          required
--   max_attempts, priority, timeout (s), backoff, max_stalled,
--   idempotency_key, trace_context         optional
--   run_at (timestamp) or delay (s)        optional; the database clock decides
-- Returns one row per input element, in input order: the job id and whether a
-- new job was inserted (false: an existing job holds the idempotency key).
-- Runs inside the caller's transaction: a rollback removes every row, and the
-- wake-up NOTIFY is only delivered on commit.
CREATE OR REPLACE FUNCTION workhorse_enqueue_many_v1(p_jobs jsonb)
RETURNS TABLE (job_id bigint, inserted boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_ids      bigint[];
    v_inserted boolean[];
    v_missing  integer;
    v_bad      record;
    v_out_of_range constant text :=
        '(@.delay.type() == "string" || @.delay < 0 || @.delay > 3155760000'
        ' || @.timeout.type() == "string" || @.timeout < 0.000001 || @.timeout > 3155760000)';
BEGIN
    IF jsonb_typeof(p_jobs) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'workhorse_enqueue_many_v1 expects a JSON array of jobs, got %',
            coalesce(jsonb_typeof(p_jobs), 'NULL') USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- The duration ranges of django_workhorse/limits.py, for every caller:
    -- beyond them make_interval overflows (silently, to a negative interval)
    -- and a run_at leaves the years Python can read back. One jsonpath pass,
    -- in C, over the whole batch; only a refused batch looks for the culprit.
    IF p_jobs @? ('$[*] ? ' || v_out_of_range)::jsonpath THEN
        SELECT e.ord, e.doc INTO v_bad
        FROM jsonb_array_elements(p_jobs) WITH ORDINALITY AS e(doc, ord)
        WHERE e.doc @? ('$ ? ' || v_out_of_range)::jsonpath
        LIMIT 1;
        RAISE EXCEPTION 'workhorse_enqueue_many_v1: job % of the batch has delay % and timeout %',
            v_bad.ord, coalesce(v_bad.doc -> 'delay', 'null'), coalesce(v_bad.doc -> 'timeout', 'null')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'delay must be from 0 to 3155760000 seconds (100 years), timeout from '
                         '0.000001 to 3155760000 seconds';
    END IF;

    WITH input AS (
        SELECT nextval('workhorse_job_id_seq') AS id, e.ord, x.*,
               CASE
                   WHEN x.run_at IS NOT NULL THEN x.run_at
                   WHEN x.delay IS NOT NULL THEN now() + make_interval(secs => x.delay)
                   ELSE now()
               END AS due_at
        FROM jsonb_array_elements(p_jobs) WITH ORDINALITY AS e(doc, ord)
        CROSS JOIN LATERAL jsonb_to_record(e.doc) AS x(
            name text, queue text, payload jsonb, max_attempts integer, priority smallint,
            timeout double precision, backoff jsonb, max_stalled integer,
            idempotency_key text, trace_context jsonb, run_at timestamptz,
            delay double precision)
    ),
    new_job AS (
        INSERT INTO workhorse_job AS j (id, name, queue, payload, max_attempts, priority, timeout,
                                        backoff, max_stalled, idempotency_key, trace_context)
        -- An option left out takes its default from workhorse_job_defaults_v1()
        -- (folded to constants when this statement is planned).
        SELECT i.id, i.name, coalesce(i.queue, workhorse_job_defaults_v1() ->> 'queue'), i.payload,
               coalesce(i.max_attempts, (workhorse_job_defaults_v1() ->> 'max_attempts')::integer),
               coalesce(i.priority, (workhorse_job_defaults_v1() ->> 'priority')::smallint),
               make_interval(secs => coalesce(
                   i.timeout, (workhorse_job_defaults_v1() ->> 'timeout')::double precision)),
               coalesce(i.backoff, workhorse_job_defaults_v1() -> 'backoff'),
               coalesce(i.max_stalled, (workhorse_job_defaults_v1() ->> 'max_stalled')::integer),
               i.idempotency_key, i.trace_context
        FROM input i
        ORDER BY i.ord
        ON CONFLICT (name, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING j.id, j.queue, j.name, j.priority, j.created_at
    ),
    live AS (
        INSERT INTO workhorse_job_runtime (job_id, queue, priority, state, run_at)
        SELECT n.id, n.queue, n.priority,
               CASE WHEN i.due_at > now() THEN 'scheduled' ELSE 'ready' END, i.due_at
        FROM new_job n JOIN input i ON i.id = n.id
        RETURNING workhorse_job_runtime.job_id, workhorse_job_runtime.queue,
                  workhorse_job_runtime.state, workhorse_job_runtime.run_at
    ),
    projected AS (
        INSERT INTO workhorse_job_query (job_id, queue, name, created_at)
        SELECT n.id, n.queue, n.name, n.created_at FROM new_job n
    ),
    evented AS (
        INSERT INTO workhorse_job_event (job_id, kind, attempt, data)
        SELECT l.job_id, 'enqueued', 0,
               jsonb_build_object('state', l.state, 'run_at', l.run_at)
        FROM live l
    ),
    woken AS (
        -- One notification per queue and commit: ready work wakes takers now,
        -- scheduled work tells them when to look again (epoch seconds).
        SELECT pg_notify('workhorse:' || l.queue,
                         CASE WHEN bool_or(l.state = 'ready') THEN ''
                              ELSE extract(epoch FROM min(l.run_at))::text END)
        FROM live l GROUP BY l.queue
    )
    SELECT array_agg(coalesce(n.id, twin.id, existing.id) ORDER BY i.ord),
           array_agg(n.id IS NOT NULL ORDER BY i.ord)
    INTO v_ids, v_inserted
    FROM input i
    LEFT JOIN new_job n ON n.id = i.id
    -- A key repeated within this call resolves to the job this call inserted
    -- (not yet visible to the statement's snapshot); otherwise to the stored one.
    LEFT JOIN LATERAL (
        SELECT n2.id FROM new_job n2
        WHERE n.id IS NULL AND n2.name = i.name
          AND n2.id IN (SELECT i2.id FROM input i2 WHERE i2.idempotency_key = i.idempotency_key)
        LIMIT 1
    ) twin ON true
    LEFT JOIN LATERAL (
        SELECT e.id FROM workhorse_job e
        WHERE n.id IS NULL AND twin.id IS NULL
          AND e.name = i.name AND e.idempotency_key = i.idempotency_key
        -- LIMIT keeps this a probe of the idempotency index per input row:
        -- without it the planner may pull the subquery up into a hash join
        -- over a sequential scan of workhorse_job when its statistics are
        -- stale (analyzed while nearly empty): 6.8 ms per call at 8,000 jobs.
        LIMIT 1
    ) existing ON true
    CROSS JOIN (SELECT count(*) FROM woken) AS w;

    -- A key inserted by a concurrent transaction that committed while this
    -- statement waited on it is invisible to that statement's snapshot; the
    -- next statement (READ COMMITTED) sees it.
    IF array_position(v_ids, NULL) IS NOT NULL THEN
        SELECT array_agg(coalesce(x.id, e.id) ORDER BY x.ord) INTO v_ids
        FROM unnest(v_ids) WITH ORDINALITY AS x(id, ord)
        LEFT JOIN LATERAL (
            SELECT j.id FROM workhorse_job j
            WHERE x.id IS NULL
              AND j.name = p_jobs -> (x.ord::integer - 1) ->> 'name'
              AND j.idempotency_key = p_jobs -> (x.ord::integer - 1) ->> 'idempotency_key'
            LIMIT 1
        ) e ON true;
        v_missing := cardinality(array_positions(v_ids, NULL));
        IF v_missing > 0 THEN
            RAISE EXCEPTION 'workhorse_enqueue_many_v1: % job(s) collided on an idempotency key '
                'held by a transaction this one cannot see (isolation above READ COMMITTED?); '
                'retry the enqueue', v_missing USING ERRCODE = 'serialization_failure';
        END IF;
    END IF;

    RETURN QUERY
    SELECT x.id, x.ins FROM unnest(v_ids, v_inserted) AS x(id, ins);
END;
$$;
