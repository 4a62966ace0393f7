-- Jobs that ended failed within p_window, by job name and error type, most
-- failures first: the admin's failures view. Read from the hourly failure
-- counters workhorse_end_runs_v1 keeps (queue_counts_v1.sql), so the cost is
-- the number of (hour, name, error type, shard) rows of the window, never
-- the number of failures. An hour counts in full when any of it is in the
-- window. last_job_id is the newest failed job of the group, for a link.
CREATE OR REPLACE FUNCTION workhorse_failures_v1(
    p_window interval DEFAULT interval '24 hours'
) RETURNS TABLE (
    name text, error_type text, failures bigint, last_job_id bigint, last_at timestamptz
)
LANGUAGE sql STABLE AS $$
    SELECT f.name, f.error_type, sum(f.failures)::bigint, max(f.last_job_id), max(f.last_at)
    FROM workhorse_failure_hour f
    WHERE f.hour > now() - p_window - interval '1 hour'
    GROUP BY f.name, f.error_type
    ORDER BY 3 DESC, 1, 2
    LIMIT 1000;
$$;
