-- The earliest time at which a claim of the given unpaused queues can take a
-- job, or NULL: an idle worker sleeps no longer than until then.
--
-- Per queue: its earliest scheduled run_at, unless its limits hold it back
-- (a job due while the queue has no room could not be claimed, and an idle
-- worker told "due now" would claim again at once, in a loop):
-- * at its concurrency limit (as many active jobs as it allows), the queue
--   reports nothing: a finish, release, sleep or recovery of one of its jobs
--   frees the place and NOTIFYs its channel, which wakes the workers;
-- * with a full rate window, not before the moment its oldest claim leaves
--   the window.
-- A rate-limited queue with ready jobs waiting reports that moment too, so
-- its workers claim again then rather than at the next poll.
CREATE OR REPLACE FUNCTION workhorse_next_run_at_v1(p_queues text[])
RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT min(least(
        CASE WHEN NOT h.at_concurrency_limit THEN greatest(s.run_at, h.window_full_until) END,
        CASE WHEN h.ready_waiting THEN h.window_reopens END))
    FROM unnest(p_queues) AS u(q)
    LEFT JOIN workhorse_queue wq ON wq.name = u.q
    LEFT JOIN LATERAL (
        SELECT rt.run_at FROM workhorse_job_runtime rt
        WHERE rt.state = 'scheduled' AND rt.queue = u.q
        ORDER BY rt.run_at LIMIT 1
    ) s ON true
    LEFT JOIN LATERAL (
        SELECT min(t.at) + wq.rate_period AS reopens, coalesce(sum(t.n), 0) AS used
        FROM unnest(wq.rate_starts, wq.rate_counts) AS t(at, n)
        WHERE wq.rate_limit IS NOT NULL AND t.at > now() - wq.rate_period
    ) w ON true
    CROSS JOIN LATERAL (
        SELECT
            -- A queue without limits reads nothing more; the CASEs keep it so.
            -- The count stops at concurrency_limit active rows.
            coalesce(CASE WHEN wq.concurrency_limit IS NOT NULL THEN
                wq.concurrency_limit <= (
                    SELECT count(*) FROM (
                        SELECT 1 FROM workhorse_job_runtime rt
                        WHERE rt.state = 'active' AND rt.queue = u.q
                        LIMIT wq.concurrency_limit) a)
            END, false) AS at_concurrency_limit,
            CASE WHEN w.used >= wq.rate_limit THEN w.reopens END AS window_full_until,
            w.reopens AS window_reopens,
            -- In the ready index's order: as an EXISTS the planner guessed
            -- a sequential scan would meet a ready row soon, and read the
            -- whole runtime table when the queue had none.
            coalesce(CASE WHEN wq.rate_limit IS NOT NULL THEN (
                SELECT rt.job_id FROM workhorse_job_runtime rt
                WHERE rt.state = 'ready' AND rt.queue = u.q
                ORDER BY rt.priority DESC, rt.run_at, rt.job_id LIMIT 1) IS NOT NULL
            END, false) AS ready_waiting
    ) h
    WHERE wq.paused IS NOT TRUE
$$;
