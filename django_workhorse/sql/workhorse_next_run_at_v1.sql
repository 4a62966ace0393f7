-- The earliest run_at among scheduled jobs of the given unpaused queues, or
-- NULL: an idle worker sleeps no longer than until then.
CREATE OR REPLACE FUNCTION workhorse_next_run_at_v1(p_queues text[])
RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT min(s.run_at)
    FROM unnest(p_queues) AS u(q)
    CROSS JOIN LATERAL (
        SELECT rt.run_at FROM workhorse_job_runtime rt
        WHERE rt.state = 'scheduled' AND rt.queue = u.q
        ORDER BY rt.run_at LIMIT 1
    ) s
    WHERE NOT EXISTS (SELECT 1 FROM workhorse_queue wq WHERE wq.name = u.q AND wq.paused)
$$;
