-- The earliest run_at among scheduled jobs of the given unpaused queues, or
-- NULL: an idle worker sleeps no longer than until then. A queue held back by
-- its rate limit (ready jobs waiting, a full window) counts too, with the
-- moment its oldest claim leaves the window, so its workers claim again then
-- rather than at the next poll.
CREATE OR REPLACE FUNCTION workhorse_next_run_at_v1(p_queues text[])
RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT least(
        (SELECT min(s.run_at)
         FROM unnest(p_queues) AS u(q)
         CROSS JOIN LATERAL (
             SELECT rt.run_at FROM workhorse_job_runtime rt
             WHERE rt.state = 'scheduled' AND rt.queue = u.q
             ORDER BY rt.run_at LIMIT 1
         ) s
         WHERE NOT EXISTS (SELECT 1 FROM workhorse_queue wq WHERE wq.name = u.q AND wq.paused)),
        (SELECT min(w.reopens)
         FROM workhorse_queue wq
         CROSS JOIN LATERAL (
             SELECT min(t.at) + wq.rate_period AS reopens
             FROM unnest(wq.rate_starts) AS t(at)
             WHERE t.at > now() - wq.rate_period
         ) w
         WHERE wq.name = ANY (p_queues) AND wq.rate_limit IS NOT NULL AND NOT wq.paused
           AND EXISTS (SELECT 1 FROM workhorse_job_runtime rt
                       WHERE rt.state = 'ready' AND rt.queue = wq.name))
    )
$$;
