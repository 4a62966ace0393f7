-- Enqueues one job without prerequisites; the psql-friendly form of
-- workhorse_enqueue_batch_v1 (one payload instead of a list). An option left
-- NULL takes its default from workhorse_job_defaults_v1(), and a NULL payload
-- is the empty object, as one left out. Returns the job id and whether a new
-- job was inserted (false: an existing job holds the idempotency key).
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
    SELECT * FROM workhorse_enqueue_batch_v1(
        p_name, jsonb_build_array(coalesce(p_payload, '{}')), p_queue, p_max_attempts,
        p_priority, p_delay, p_run_at, p_idempotency_key, p_timeout, p_backoff, p_max_stalled,
        p_trace_context)
$$;
