-- Live jobs by queue and state, for the queue-depth gauge. Reads the narrow
-- runtime table only (terminal jobs are not there); one worker of a fleet
-- runs it every QUEUE_METRICS_INTERVAL.
CREATE OR REPLACE FUNCTION workhorse_queue_depth_v1()
RETURNS TABLE (queue text, state text, jobs bigint)
LANGUAGE sql STABLE AS $$
    SELECT rt.queue, rt.state, count(*) FROM workhorse_job_runtime rt
    GROUP BY rt.queue, rt.state ORDER BY rt.queue, rt.state
$$;
