-- Enqueues one job; the psql-friendly form of workhorse_enqueue_many_v1.
-- An option left NULL takes its default from workhorse_job_defaults_v1().
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
LANGUAGE sql AS $$
    SELECT * FROM workhorse_enqueue_many_v1(jsonb_build_array(jsonb_build_object(
        'name', p_name, 'queue', p_queue, 'payload', p_payload,
        'max_attempts', p_max_attempts, 'priority', p_priority, 'delay', p_delay,
        'run_at', p_run_at, 'idempotency_key', p_idempotency_key, 'timeout', p_timeout,
        'backoff', p_backoff, 'max_stalled', p_max_stalled, 'trace_context', p_trace_context)))
$$;
