-- Enqueues many jobs of one name with the same options, none with
-- prerequisites: what one enqueue_many() call in Python asks for. The options
-- are the arguments of workhorse_enqueue_v1; p_payloads is a JSON array of
-- payload objects, one job each. Returns one row per payload, in input order:
-- the job id and whether a new job was inserted.
--
-- A batch with an idempotency key holds one job: the first payload is
-- enqueued under the key (or finds the job that holds it) and every payload
-- resolves to that job, inserted false but for the first, as in
-- workhorse_enqueue_many_v1.
--
-- It writes what workhorse_enqueue_many_v1 writes for such a batch, from
-- scalar options and a list of payloads: no per-job object of fourteen
-- fields to decode, no per-job look-up of a key. For 1,000 no-op jobs its
-- server time is 13-22 ms where the general function takes 31-32 ms
-- (pgbench, one client, synchronous_commit off, in turns).
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
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    v_due   timestamptz;
    v_queue text := coalesce(p_queue, workhorse_job_defaults_v1() ->> 'queue');
    v_count integer;
    v_first record;
BEGIN
    IF jsonb_typeof(p_payloads) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'workhorse_enqueue_batch_v1 expects a JSON array of payloads, got %',
            coalesce(jsonb_typeof(p_payloads), 'NULL') USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_count := jsonb_array_length(p_payloads);
    IF v_count = 0 THEN
        RETURN;
    END IF;

    IF p_idempotency_key IS NOT NULL THEN
        SELECT e.job_id, e.inserted INTO v_first
        FROM workhorse_enqueue_v1(
            p_name, p_queue, p_payloads -> 0, p_max_attempts, p_priority, p_delay, p_run_at,
            p_idempotency_key, p_timeout, p_backoff, p_max_stalled, p_trace_context) AS e;
        RETURN QUERY
        SELECT v_first.job_id, g = 1 AND v_first.inserted
        FROM generate_series(1, v_count) AS g ORDER BY g;
        RETURN;
    END IF;

    -- The checks and the due time of workhorse_enqueue_v1, once for the batch.
    IF p_delay IS NOT NULL AND NOT (p_delay BETWEEN 0 AND 3155760000)
       OR p_timeout IS NOT NULL AND NOT (p_timeout BETWEEN 0.000001 AND 3155760000) THEN
        RAISE EXCEPTION 'workhorse_enqueue_batch_v1: the jobs have delay % and timeout %',
            coalesce(p_delay::text, 'null'), coalesce(p_timeout::text, 'null')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'delay must be from 0 to 3155760000 seconds (100 years), timeout from '
                         '0.000001 to 3155760000 seconds';
    END IF;
    v_due := CASE WHEN p_run_at IS NOT NULL THEN p_run_at
                  WHEN p_delay IS NOT NULL THEN now() + make_interval(secs => p_delay)
                  ELSE now() END;

    RETURN QUERY
    WITH input AS (
        -- Ids in input order, drawn before any insert.
        SELECT nextval('workhorse_job_id_seq') AS id, e.ord, e.doc
        FROM jsonb_array_elements(p_payloads) WITH ORDINALITY AS e(doc, ord)
    ),
    new_job AS (
        INSERT INTO workhorse_job AS j (id, name, queue, payload, max_attempts, priority, timeout,
                                        backoff, max_stalled, trace_context, first_due_at)
        SELECT i.id, p_name, v_queue, i.doc,
               coalesce(p_max_attempts,
                        (workhorse_job_defaults_v1() ->> 'max_attempts')::integer),
               coalesce(p_priority, (workhorse_job_defaults_v1() ->> 'priority')::integer),
               make_interval(secs => coalesce(
                   p_timeout, (workhorse_job_defaults_v1() ->> 'timeout')::double precision)),
               nullif(p_backoff, workhorse_job_defaults_v1() -> 'backoff'),
               coalesce(p_max_stalled,
                        (workhorse_job_defaults_v1() ->> 'max_stalled')::integer),
               p_trace_context, nullif(v_due, now())
        FROM input i
        ORDER BY i.ord
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
    SELECT i.id, true FROM input i ORDER BY i.ord;

    -- One wake-up for the batch, as workhorse_enqueue_many_v1 sends.
    PERFORM pg_notify('workhorse:' || v_queue,
                      CASE WHEN v_due > now() THEN extract(epoch FROM v_due)::text ELSE '' END);
END;
$$;
