-- The running schedules a sweep must look at: those whose planned slot is
-- due, and those with no slot planned yet. Also returns the database clock,
-- which the caller plans slots against (never the worker's clock), and the
-- job name and queue of the jobs each one enqueues (for the worker's log lines).
--
-- A next_run_at outside the years 1 to 9999 (UTC), which Python cannot
-- load ('-infinity', 'infinity', a year after 9999: only a hand-written
-- UPDATE stores one, workhorse_schedule_fire_v1 refuses them), is returned
-- as NULL with 'unreadable' saying what it was and how to fix it, whether
-- due or not: the sweep reports the schedule and goes on with the others,
-- where reading the value would fail the whole sweep.
CREATE OR REPLACE FUNCTION workhorse_schedule_due_v1()
RETURNS TABLE (name text, cron text, timezone text, catch_up text,
               next_run_at timestamptz, db_now timestamptz, job_name text, queue text,
               unreadable text)
LANGUAGE sql STABLE AS $$
    SELECT s.name, s.cron, s.timezone, s.catch_up,
           CASE WHEN r.readable THEN s.next_run_at END, now(),
           s.job_name, s.job_options->>'queue',
           CASE WHEN NOT r.readable THEN
               'next_run_at ' || s.next_run_at::text || ' is outside the years 1 to 9999 (UTC) '
               || 'that Python reads; set it to NULL (the next sweep plans the first slot after now)'
           END
    FROM workhorse_schedule s
    CROSS JOIN LATERAL (
        SELECT s.next_run_at IS NULL
               OR (s.next_run_at >= '0001-01-01 00:00:00+00'
                   AND s.next_run_at < '10000-01-01 00:00:00+00') AS readable
    ) r
    WHERE NOT s.paused
      AND (s.next_run_at IS NULL OR s.next_run_at <= now()
           OR s.next_run_at >= '10000-01-01 00:00:00+00')
    ORDER BY s.next_run_at NULLS FIRST, s.name
$$;
