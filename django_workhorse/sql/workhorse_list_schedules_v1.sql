-- Every schedule with its next run, in name order: the operator's view
-- (workhorse_status, the admin's queues page). The table holds one row per
-- declared schedule, so it is read whole.
CREATE OR REPLACE FUNCTION workhorse_list_schedules_v1()
RETURNS TABLE (name text, job_name text, queue text, cron text, timezone text,
               catch_up text, paused boolean, next_run_at timestamptz,
               last_slot_at timestamptz, last_job_id bigint)
LANGUAGE sql STABLE AS $$
    SELECT s.name, s.job_name, s.job_options->>'queue', s.cron, s.timezone,
           s.catch_up, s.paused, s.next_run_at, s.last_slot_at, s.last_job_id
    FROM workhorse_schedule s
    ORDER BY s.name
$$;
