-- The running schedules a sweep must look at: those whose planned slot is
-- due, and those with no slot planned yet. Also returns the database clock,
-- which the caller plans slots against (never the worker's clock).
CREATE OR REPLACE FUNCTION workhorse_schedule_due_v1()
RETURNS TABLE (name text, cron text, timezone text, catch_up text,
               next_run_at timestamptz, db_now timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT s.name, s.cron, s.timezone, s.catch_up, s.next_run_at, now()
    FROM workhorse_schedule s
    WHERE NOT s.paused AND (s.next_run_at IS NULL OR s.next_run_at <= now())
    ORDER BY s.next_run_at NULLS FIRST, s.name
$$;
