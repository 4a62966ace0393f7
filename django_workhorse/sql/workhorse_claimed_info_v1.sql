-- For the worker's tracing and metrics only: what the claim does not return
-- about just-claimed jobs (the producer's trace context, when the job was
-- enqueued and when it was due). One call per claim, and only when tracing
-- or metrics are on.
CREATE OR REPLACE FUNCTION workhorse_claimed_info_v1(p_job_ids bigint[])
RETURNS TABLE (job_id bigint, trace_context jsonb, created_at timestamptz,
               due_at timestamptz, started_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT j.id, j.trace_context, j.created_at, rt.run_at, rt.attempt_started_at
    FROM unnest(p_job_ids) AS i(id)
    JOIN workhorse_job j ON j.id = i.id
    LEFT JOIN workhorse_job_runtime rt ON rt.job_id = i.id
$$;
