-- workhorse_claim_many_v1, plus what tracing and metrics need about each
-- claimed job: the producer's trace context, how long after its enqueue it
-- was claimed, and how long after it was due (claimed minus run_at); seconds
-- on the database clock.
-- Workers call it instead of the plain claim only while tracing or metrics
-- are on, so that those cost no second round trip per claim. Rows come in
-- the plain claim's order.
CREATE OR REPLACE FUNCTION workhorse_claim_many_observed_v1(
    p_worker text,
    p_queues text[],
    p_limits integer[],
    p_lease_seconds double precision
) RETURNS TABLE (
    job_id bigint, name text, queue text, payload jsonb, attempt integer,
    max_attempts integer, fence bigint, timeout_seconds double precision,
    lease_expires_at timestamptz, cancel_requested boolean,
    trace_context jsonb, waited_seconds double precision, pickup_seconds double precision
)
LANGUAGE sql AS $$
    SELECT c.job_id, c.name, c.queue, c.payload, c.attempt, c.max_attempts, c.fence,
           c.timeout_seconds, c.lease_expires_at, c.cancel_requested,
           x.trace_context, x.waited_seconds, x.pickup_seconds
    FROM workhorse_claim_many_v1(p_worker, p_queues, p_limits, p_lease_seconds)
        WITH ORDINALITY AS c
    -- Primary-key probes, kept parameterized by OFFSET 0 (as in the claim).
    -- They read the rows as they were before the claim (this statement's
    -- snapshot): run_at is the due time; now() is the claim's start time.
    CROSS JOIN LATERAL (
        SELECT j.trace_context,
               extract(epoch FROM now() - j.created_at)::double precision AS waited_seconds,
               extract(epoch FROM now() - rt.run_at)::double precision AS pickup_seconds
        FROM workhorse_job j JOIN workhorse_job_runtime rt ON rt.job_id = j.id
        WHERE j.id = c.job_id OFFSET 0
    ) x
    ORDER BY c.ordinality
$$;
