-- Enqueues jobs of one name with the same options, none with prerequisites:
-- what one enqueue() or enqueue_many() call in Python asks for, and what
-- workhorse_enqueue_v1 (one job, from psql) calls. p_payloads is a JSON array
-- of payload objects, one job each; an option left NULL takes its default
-- from workhorse_job_defaults_v1(). Returns one row per payload, in input
-- order: the job id and whether a new job was inserted. Runs inside the
-- caller's transaction: a rollback removes every row, and the wake-up NOTIFY
-- (one per call) is delivered on commit.
--
-- A batch with an idempotency key holds one job: the first payload is
-- inserted under the key unless a job holds it already, and every payload
-- resolves to that job (inserted true for the first payload of a new job
-- only), as in workhorse_enqueue_many_v1.
--
-- It writes what workhorse_enqueue_many_v1 writes for such jobs, from scalar
-- options and a list of payloads: no per-job object of fourteen fields to
-- decode, no per-job look-up of a key. Server time (pgbench, one client,
-- synchronous_commit off, in turns): 13-22 ms for 1,000 no-op jobs where the
-- general function takes 31-32 ms; 0.13-0.15 ms for one job where a one-job
-- array through the general function took 0.39-0.46 ms.
--
-- One payload (every enqueue() in Python) takes a statement of its own: one
-- VALUES row, no list to number, aggregate and unnest again. With
-- plan_cache_mode = force_generic_plan, PL/pgSQL plans each statement once
-- per session instead of on every call (with enable_seqscan off a generic
-- plan never looks cheaper than the custom ones it is compared with). Backend
-- CPU per one-job call, measured call by call in turns (5,000 calls each,
-- synchronous_commit off, medians): 358 us before, 333 us with generic plans,
-- 280 us with generic plans and the one-payload statement; 1,000 payloads
-- cost the same either way (~15 ms).
--
-- Re-created by migration 0006 (the first body is in
-- workhorse_enqueue_batch_v1.sql) with the same arguments, results and rows:
-- one payload without an idempotency key, delay or run_at (every plain
-- enqueue() in Python) is written by one statement that also NOTIFYs, and
-- returned without a query; everything else runs the body of before,
-- unchanged, as the nested block below.
--
-- Why: a one-job call spent more server time in PL/pgSQL around its one
-- INSERT statement than the statement's own parse and plan would cost: the
-- defaults and checks of the DECLARE section and the IFs (a dozen expressions
-- evaluated one by one), a PERFORM for the NOTIFY and a RETURN QUERY that
-- sorts one id. And the insert took ON CONFLICT's speculative path (a
-- speculative-insertion lock and a confirming WAL record) with no key that
-- could conflict: the arbiter index holds keyed jobs only, so without a key
-- a plain INSERT writes the same row. Backend CPU of a one-job call
-- (interleaved, 20 turns of 200 calls, synchronous_commit off, medians):
-- 106-118 us before, 92-104 us now, against 69-88 us for the three-row
-- statement sent alone (parsed and planned each time); WAL per job 870 ->
-- 824 bytes. The client waits that much less, and a Python client that sleeps
-- on its socket spends CPU in proportion to the wait (docs/decisions.md, "The
-- single enqueue's own cost").

CREATE OR REPLACE FUNCTION workhorse_enqueue_batch_v1(
    p_name text,
    p_payloads jsonb,
    p_queue text DEFAULT NULL,
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
-- depend on statistics"): the idempotency look-up below; planned once a
-- session (see above).
LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    IF p_idempotency_key IS NULL AND p_delay IS NULL AND p_run_at IS NULL
       AND jsonb_typeof(p_payloads) = 'array' AND jsonb_array_length(p_payloads) = 1
       AND (p_timeout IS NULL OR p_timeout BETWEEN 0.000001 AND 3155760000) THEN
        -- The rows of the general body for this case: due now (ready,
        -- first_due_at NULL), no key, the defaults filled in the same way.
        WITH new_job AS (
            INSERT INTO workhorse_job AS j (id, name, queue, payload, max_attempts, priority,
                                            timeout, backoff, max_stalled, trace_context)
            VALUES (nextval('workhorse_job_id_seq'), p_name,
                    coalesce(p_queue, workhorse_job_defaults_v1() ->> 'queue'),
                    p_payloads -> 0,
                    coalesce(p_max_attempts,
                             (workhorse_job_defaults_v1() ->> 'max_attempts')::integer),
                    coalesce(p_priority, (workhorse_job_defaults_v1() ->> 'priority')::integer),
                    make_interval(secs => coalesce(
                        p_timeout, (workhorse_job_defaults_v1() ->> 'timeout')::double precision)),
                    nullif(p_backoff, workhorse_job_defaults_v1() -> 'backoff'),
                    coalesce(p_max_stalled,
                             (workhorse_job_defaults_v1() ->> 'max_stalled')::integer),
                    p_trace_context)
            RETURNING j.id, j.queue, j.priority, j.created_at
        ),
        live AS (
            INSERT INTO workhorse_job_runtime (job_id, queue, priority, state, run_at)
            SELECT n.id, n.queue, n.priority, 'ready', now() FROM new_job n
        ),
        projected AS (
            INSERT INTO workhorse_job_query (job_id, queue, name, created_at)
            SELECT n.id, n.queue, p_name, n.created_at FROM new_job n
        )
        -- Ready work wakes takers now (an empty payload), as below.
        SELECT n.id INTO job_id FROM new_job n, pg_notify('workhorse:' || n.queue, '') AS woken;
        inserted := true;
        RETURN NEXT;
        RETURN;
    END IF;

    DECLARE
        v_due      timestamptz;
        v_queue    text := coalesce(p_queue, workhorse_job_defaults_v1() ->> 'queue');
        -- The options every job of the call is written with, defaults filled in
        -- once for both statements below.
        v_max_attempts integer := coalesce(p_max_attempts,
                                           (workhorse_job_defaults_v1() ->> 'max_attempts')::integer);
        v_priority integer := coalesce(p_priority,
                                       (workhorse_job_defaults_v1() ->> 'priority')::integer);
        v_timeout  interval;  -- once p_timeout is known to be in range
        -- The default policy is stored as NULL (tables_v1.sql).
        v_backoff  jsonb := nullif(p_backoff, workhorse_job_defaults_v1() -> 'backoff');
        v_max_stalled integer := coalesce(p_max_stalled,
                                          (workhorse_job_defaults_v1() ->> 'max_stalled')::integer);
        v_count    integer;
        v_ids      bigint[];
        v_inserted integer;
        v_key_job  bigint;
    BEGIN
        IF jsonb_typeof(p_payloads) IS DISTINCT FROM 'array' THEN
            RAISE EXCEPTION 'workhorse_enqueue_batch_v1 expects a JSON array of payloads, got %',
                coalesce(jsonb_typeof(p_payloads), 'NULL') USING ERRCODE = 'invalid_parameter_value';
        END IF;
        v_count := jsonb_array_length(p_payloads);
        IF v_count = 0 THEN
            RETURN;
        END IF;
        -- The duration ranges of django_workhorse/limits.py, as in
        -- workhorse_enqueue_many_v1: beyond them make_interval overflows
        -- (silently, to a negative interval). NaN is above every number, so it is
        -- refused too.
        IF p_delay IS NOT NULL AND NOT (p_delay BETWEEN 0 AND 3155760000)
           OR p_timeout IS NOT NULL AND NOT (p_timeout BETWEEN 0.000001 AND 3155760000) THEN
            RAISE EXCEPTION 'workhorse_enqueue_batch_v1: the jobs of % have delay % and timeout %',
                p_name, coalesce(p_delay::text, 'null'), coalesce(p_timeout::text, 'null')
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'delay must be from 0 to 3155760000 seconds (100 years), timeout from '
                             '0.000001 to 3155760000 seconds';
        END IF;
        v_timeout := make_interval(secs => coalesce(
            p_timeout, (workhorse_job_defaults_v1() ->> 'timeout')::double precision));
        v_due := CASE WHEN p_run_at IS NOT NULL THEN p_run_at
                      WHEN p_delay IS NOT NULL THEN now() + make_interval(secs => p_delay)
                      ELSE now() END;

        IF v_count = 1 THEN
            -- The rows of the list statement below, for its one payload.
            WITH new_job AS (
                INSERT INTO workhorse_job AS j (id, name, queue, payload, max_attempts, priority,
                                                timeout, backoff, max_stalled, idempotency_key,
                                                trace_context, first_due_at)
                VALUES (nextval('workhorse_job_id_seq'), p_name, v_queue, p_payloads -> 0,
                        v_max_attempts, v_priority, v_timeout, v_backoff, v_max_stalled,
                        p_idempotency_key, p_trace_context, nullif(v_due, now()))
                ON CONFLICT (name, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
                RETURNING j.id, j.priority, j.created_at
            ),
            live AS (
                INSERT INTO workhorse_job_runtime (job_id, queue, priority, state, run_at)
                SELECT n.id, v_queue, n.priority,
                       CASE WHEN v_due > now() THEN 'scheduled' ELSE 'ready' END, v_due
                FROM new_job n
            ),
            projected AS (
                INSERT INTO workhorse_job_query (job_id, queue, name, created_at)
                SELECT n.id, v_queue, p_name, n.created_at FROM new_job n
            )
            SELECT ARRAY[n.id] INTO v_ids FROM new_job n;
            v_inserted := CASE WHEN FOUND THEN 1 ELSE 0 END;
        ELSE
            WITH input AS (
                -- Ids in input order, drawn before any insert; with a key, the
                -- first payload only (the batch holds one job).
                SELECT nextval('workhorse_job_id_seq') AS id, e.ord, e.doc
                FROM jsonb_array_elements(p_payloads) WITH ORDINALITY AS e(doc, ord)
                WHERE p_idempotency_key IS NULL OR e.ord = 1
            ),
            new_job AS (
                INSERT INTO workhorse_job AS j (id, name, queue, payload, max_attempts, priority,
                                                timeout, backoff, max_stalled, idempotency_key,
                                                trace_context, first_due_at)
                SELECT i.id, p_name, v_queue, i.doc, v_max_attempts, v_priority, v_timeout,
                       v_backoff, v_max_stalled, p_idempotency_key, p_trace_context,
                       nullif(v_due, now())
                FROM input i
                ORDER BY i.ord
                ON CONFLICT (name, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
                RETURNING j.id, j.priority, j.created_at
            ),
            live AS (
                INSERT INTO workhorse_job_runtime (job_id, queue, priority, state, run_at)
                SELECT n.id, v_queue, n.priority,
                       CASE WHEN v_due > now() THEN 'scheduled' ELSE 'ready' END, v_due
                FROM new_job n
            ),
            projected AS (
                INSERT INTO workhorse_job_query (job_id, queue, name, created_at)
                SELECT n.id, v_queue, p_name, n.created_at FROM new_job n
            )
            -- No 'enqueued' events: the timeline reads them from the job rows.
            SELECT array_agg(i.id ORDER BY i.ord), (SELECT count(*) FROM new_job)
            INTO v_ids, v_inserted
            FROM input i;
        END IF;

        IF v_inserted > 0 THEN
            -- Ready work wakes takers now; scheduled work tells them when to look
            -- again (epoch seconds), as workhorse_enqueue_many_v1 does.
            PERFORM pg_notify('workhorse:' || v_queue,
                              CASE WHEN v_due > now() THEN extract(epoch FROM v_due)::text
                                   ELSE '' END);
        END IF;
        IF p_idempotency_key IS NULL THEN
            RETURN QUERY SELECT x.id, true FROM unnest(v_ids) WITH ORDINALITY AS x(id, ord)
                         ORDER BY x.ord;
            RETURN;
        END IF;

        IF v_inserted = 1 THEN
            v_key_job := v_ids[1];
        ELSE
            -- The key is held. A new statement (READ COMMITTED) also sees a job
            -- that a concurrent transaction committed while the insert waited.
            SELECT j.id INTO v_key_job FROM workhorse_job j
            WHERE j.name = p_name AND j.idempotency_key = p_idempotency_key
            LIMIT 1;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'workhorse_enqueue_batch_v1: job % collided on an idempotency key '
                    'held by a transaction this one cannot see (isolation above READ COMMITTED?); '
                    'retry the enqueue', p_name USING ERRCODE = 'serialization_failure';
            END IF;
        END IF;
        RETURN QUERY SELECT v_key_job, g = 1 AND v_inserted = 1
                     FROM generate_series(1, v_count) AS g ORDER BY g;
    END;
END;
$$;
