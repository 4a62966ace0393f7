-- What tracing and metrics need about jobs a worker has just claimed, read
-- after the claim by a worker with tracing or metrics on: the producer's
-- trace context, how long after its enqueue each job was claimed
-- (waited_seconds), and how long after it was due (pickup_seconds), in
-- seconds on the database clock, in the order of p_job_ids.
--
-- A read of its own, after workhorse_succeed_and_claim_v1 wrote held
-- successes and claimed in one call: those successes are then written by the
-- same SQL whether tracing or metrics are on or not (a plain claim gets the
-- same figures in its own round trip from workhorse_claim_many_observed_v1). The claim's time is the attempt's start
-- (attempt_started_at, the claim's now()), and run_at is still the due time
-- (the claim does not move it), so the figures are those the claim would
-- have computed itself. A job that is no longer live by then (acked
-- canceled at once) reads NULLs.
CREATE OR REPLACE FUNCTION workhorse_claim_observations_v1(p_job_ids bigint[])
RETURNS TABLE (
    job_id bigint, trace_context jsonb, waited_seconds double precision,
    pickup_seconds double precision
)
-- Index paths whatever the statistics say (docs/sql.md, "Plans that do not
-- depend on statistics"): primary-key probes, kept parameterized by OFFSET 0.
LANGUAGE sql STABLE SET enable_seqscan = off AS $$
    SELECT u.job_id, x.trace_context, x.waited_seconds, x.pickup_seconds
    FROM unnest(p_job_ids) WITH ORDINALITY AS u(job_id, ord)
    LEFT JOIN LATERAL (
        SELECT j.trace_context,
               extract(epoch FROM rt.attempt_started_at - j.created_at)::double precision
                   AS waited_seconds,
               extract(epoch FROM rt.attempt_started_at - rt.run_at)::double precision
                   AS pickup_seconds
        FROM workhorse_job j JOIN workhorse_job_runtime rt ON rt.job_id = j.id
        WHERE j.id = u.job_id OFFSET 0
    ) x ON true
    ORDER BY u.ord;
$$;
