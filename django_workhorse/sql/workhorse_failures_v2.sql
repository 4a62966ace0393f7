-- Jobs that ended failed within p_window, by job name and error type, most
-- failures first, as workhorse_failures_v1 gives them, for any row the
-- failure counters can hold.
--
-- A group's latest failure time outside the years 1 to 9999 (UTC), which
-- Python cannot load (only a hand-written row of workhorse_failure_hour
-- holds one: 'infinity', the year 10000), is returned as NULL, and
-- 'unreadable' says what it was and the fix, so that one such row neither
-- hides the other groups nor fails the failures page. A count beyond
-- bigint (counters written by hand near its limits, summed over shards) is
-- returned clamped to bigint rather than failing the call.
CREATE OR REPLACE FUNCTION workhorse_failures_v2(
    p_window interval DEFAULT interval '24 hours'
) RETURNS TABLE (
    name text, error_type text, failures bigint, last_job_id bigint, last_at timestamptz,
    unreadable text
)
LANGUAGE sql STABLE AS $$
    SELECT g.name, g.error_type,
           greatest(least(g.failures, 9223372036854775807), -9223372036854775808)::bigint,
           g.last_job_id,
           CASE WHEN r.last_ok THEN g.last_at END,
           CASE WHEN NOT r.last_ok THEN 'last_at ' || g.last_at::text
               || ' is outside the years 1 to 9999 (UTC) that Python reads; delete the rows'
               || ' of workhorse_failure_hour with that last_at (counters of failures only:'
               || ' no job is lost)' END
    FROM (
        SELECT f.name, f.error_type, sum(f.failures) AS failures,
               max(f.last_job_id) AS last_job_id, max(f.last_at) AS last_at
        FROM workhorse_failure_hour f
        WHERE f.hour > now() - p_window - interval '1 hour'
        GROUP BY f.name, f.error_type
    ) g
    CROSS JOIN LATERAL (
        SELECT g.last_at >= '0001-01-01 00:00:00+00'
               AND g.last_at < '10000-01-01 00:00:00+00' AS last_ok
    ) r
    ORDER BY 3 DESC, 1, 2
    LIMIT 1000;
$$;
