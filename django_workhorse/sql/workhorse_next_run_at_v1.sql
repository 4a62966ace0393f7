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
--
-- A queue whose claim was held back by its concurrency limit (held_back)
-- is counted only once the ends in flight of its active jobs have
-- committed: KEY SHARE locks on its active rows wait for any transaction
-- that is ending one (they lock it FOR UPDATE), and the count is a later
-- statement, which sees those ends. A finish whose wake-up read of
-- held_back came before the claim set it sends no NOTIFY, and this is what
-- still sees its place free: then the queue reports now() when ready jobs
-- wait and the limit leaves room. (KEY SHARE does not stop heartbeats,
-- which lock FOR NO KEY UPDATE.)
CREATE OR REPLACE FUNCTION workhorse_next_run_at_v1(p_queues text[])
RETURNS timestamptz
-- Index paths whatever the statistics say, as the claim's (docs/sql.md,
-- "Plans that do not depend on statistics"): with a few thousand live rows
-- the count of a limited queue's active jobs was planned as a sequential
-- scan of the runtime table now and then, which grows with the table.
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    v_at   timestamptz;
    v_held text[];
BEGIN
    SELECT array_agg(wq.name) INTO v_held FROM workhorse_queue wq
    WHERE wq.name = ANY (p_queues) AND wq.held_back AND wq.concurrency_limit IS NOT NULL;
    IF v_held IS NOT NULL THEN
        PERFORM 1 FROM workhorse_job_runtime rt
        WHERE rt.state = 'active' AND rt.queue = ANY (v_held)
        ORDER BY rt.job_id
        FOR KEY SHARE;
    END IF;
    SELECT min(least(
        CASE WHEN NOT h.at_concurrency_limit THEN greatest(s.run_at, h.window_full_until) END,
        CASE WHEN h.ready_waiting THEN h.window_reopens END,
        CASE WHEN wq.held_back AND NOT h.at_concurrency_limit AND h.ready_waiting
                  AND h.window_full_until IS NULL THEN now() END))
    INTO v_at
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
            coalesce(CASE WHEN wq.rate_limit IS NOT NULL OR wq.held_back THEN (
                SELECT rt.job_id FROM workhorse_job_runtime rt
                WHERE rt.state = 'ready' AND rt.queue = u.q
                ORDER BY rt.priority DESC, rt.run_at, rt.job_id LIMIT 1) IS NOT NULL
            END, false) AS ready_waiting
        -- OFFSET 0: each of these is read in more than one CASE above, and
        -- pulled up into the outer query its subplan would be copied into each.
        OFFSET 0
    ) h
    WHERE wq.paused IS NOT TRUE;
    RETURN v_at;
END;
$$;
