-- Every schedule with its next run, in name order: the operator's view
-- (workhorse_status, the admin's queues page). The table holds one row per
-- declared schedule, so it is read whole.
--
-- A next_run_at or last_slot_at outside the years 1 to 9999 (UTC), which
-- Python cannot load (only a hand-written UPDATE stores one), is returned
-- as NULL, and 'unreadable' says what it was and how to fix it, so that one
-- such row neither hides the others nor fails the page.
CREATE OR REPLACE FUNCTION workhorse_list_schedules_v1()
RETURNS TABLE (name text, job_name text, queue text, cron text, timezone text,
               catch_up text, paused boolean, next_run_at timestamptz,
               last_slot_at timestamptz, last_job_id bigint, unreadable text)
LANGUAGE sql STABLE AS $$
    SELECT s.name, s.job_name, s.job_options->>'queue', s.cron, s.timezone,
           s.catch_up, s.paused,
           CASE WHEN r.next_ok THEN s.next_run_at END,
           CASE WHEN r.last_ok THEN s.last_slot_at END,
           s.last_job_id,
           nullif(concat_ws('; ',
               CASE WHEN NOT r.next_ok THEN 'next_run_at ' || s.next_run_at::text
                   || ' is outside the years 1 to 9999 (UTC) that Python reads; set it to NULL'
                   || ' (the next sweep plans the first slot after now)' END,
               CASE WHEN NOT r.last_ok THEN 'last_slot_at ' || s.last_slot_at::text
                   || ' is outside the years 1 to 9999 (UTC) that Python reads; set it to NULL'
               END), '')
    FROM workhorse_schedule s
    CROSS JOIN LATERAL (
        SELECT s.next_run_at IS NULL
               OR (s.next_run_at >= '0001-01-01 00:00:00+00'
                   AND s.next_run_at < '10000-01-01 00:00:00+00') AS next_ok,
               s.last_slot_at IS NULL
               OR (s.last_slot_at >= '0001-01-01 00:00:00+00'
                   AND s.last_slot_at < '10000-01-01 00:00:00+00') AS last_ok
    ) r
    ORDER BY s.name
$$;
