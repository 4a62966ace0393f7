-- The running schedules a sweep must look at: those whose planned slot is
-- due, and those with no slot planned yet. Also returns the database clock,
-- which the caller plans slots against (never the worker's clock), and the
-- job name and queue of the jobs each one enqueues (for the worker's log lines).
CREATE OR REPLACE FUNCTION workhorse_schedule_due_v1()
RETURNS TABLE (name text, cron text, timezone text, catch_up text,
               next_run_at timestamptz, db_now timestamptz, job_name text, queue text)
LANGUAGE sql STABLE AS $$
    SELECT s.name, s.cron, s.timezone, s.catch_up, s.next_run_at, now(),
           s.job_name, s.job_options->>'queue'
    FROM workhorse_schedule s
    WHERE NOT s.paused AND (s.next_run_at IS NULL OR s.next_run_at <= now())
    ORDER BY s.next_run_at NULLS FIRST, s.name
$$;
