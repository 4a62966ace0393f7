-- Makes workhorse_schedule hold exactly the schedules in p_schedules, a JSON
-- array of objects {name, job_name, cron, timezone, payload, job_options,
-- catch_up}: new ones are added, changed ones updated, the others deleted
-- (a schedule removed from code and settings stops). A changed cron or
-- timezone forgets the planned slot; paused and the last slot are kept.
-- Returns what happened to each name: 'added', 'updated', 'unchanged',
-- 'removed'.
--
-- A timezone must name a zone of the IANA database (the rule of
-- django_workhorse/cron.py, as far as SQL can tell without the host's zone
-- files): 'localtime' (each host's own zone: hosts in different zones would
-- plan different slots of one schedule), 'posixrules', 'Factory', the
-- posix/ and right/ copies and anything not shaped like a zone name are
-- refused (22023) before anything changes.
--
-- Every worker runs this when it starts. The transaction-scoped advisory lock
-- makes concurrent starts take turns, so two workers with different code
-- during a rolling deploy leave the table as the last one says, never a mix.
CREATE OR REPLACE FUNCTION workhorse_schedule_sync_v1(p_schedules jsonb)
RETURNS TABLE (name text, action text)
LANGUAGE plpgsql AS $$
DECLARE
    v_bad record;
BEGIN
    IF jsonb_typeof(p_schedules) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'workhorse_schedule_sync_v1 expects a JSON array of schedules, got %',
            coalesce(jsonb_typeof(p_schedules), 'NULL') USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT x.name, x.timezone INTO v_bad
    FROM jsonb_to_recordset(p_schedules) AS x(name text, timezone text)
    WHERE x.timezone IN ('localtime', 'posixrules', 'Factory')
       OR x.timezone ~ '^(posix|right)/'
       OR x.timezone !~ '^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$'
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'workhorse_schedule_sync_v1: schedule % has timezone %, which is not an '
            'IANA time zone name', to_jsonb(v_bad.name)::text, to_jsonb(v_bad.timezone)::text
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'name a zone such as ''Europe/Paris'' or ''UTC''; ''localtime'', '
                         '''posixrules'' and ''Factory'' are not zones';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('workhorse_schedule_sync_v1'));

    RETURN QUERY
    WITH wanted AS (
        SELECT x.name, x.job_name, x.cron, coalesce(x.timezone, 'UTC') AS timezone,
               coalesce(x.payload, '{}') AS payload, coalesce(x.job_options, '{}') AS job_options,
               coalesce(x.catch_up, 'latest') AS catch_up
        FROM jsonb_to_recordset(p_schedules) AS x(
            name text, job_name text, cron text, timezone text, payload jsonb,
            job_options jsonb, catch_up text)
    ),
    removed AS (
        DELETE FROM workhorse_schedule s
        WHERE NOT EXISTS (SELECT 1 FROM wanted w WHERE w.name = s.name)
        RETURNING s.name
    ),
    before AS (
        SELECT s.* FROM workhorse_schedule s JOIN wanted w ON w.name = s.name
    ),
    upserted AS (
        INSERT INTO workhorse_schedule AS s
            (name, job_name, cron, timezone, payload, job_options, catch_up)
        SELECT w.name, w.job_name, w.cron, w.timezone, w.payload, w.job_options, w.catch_up
        FROM wanted w
        ORDER BY w.name
        ON CONFLICT ON CONSTRAINT workhorse_schedule_pkey DO UPDATE SET
            job_name = excluded.job_name,
            cron = excluded.cron,
            timezone = excluded.timezone,
            payload = excluded.payload,
            job_options = excluded.job_options,
            catch_up = excluded.catch_up,
            next_run_at = CASE
                WHEN (s.cron, s.timezone) IS DISTINCT FROM (excluded.cron, excluded.timezone)
                THEN NULL ELSE s.next_run_at END,
            updated_at = now()
        WHERE (s.job_name, s.cron, s.timezone, s.payload, s.job_options, s.catch_up)
            IS DISTINCT FROM (excluded.job_name, excluded.cron, excluded.timezone,
                              excluded.payload, excluded.job_options, excluded.catch_up)
        RETURNING s.name
    )
    SELECT w.name,
           CASE WHEN b.name IS NULL THEN 'added'
                WHEN u.name IS NOT NULL THEN 'updated'
                ELSE 'unchanged' END
    FROM wanted w
    LEFT JOIN before b ON b.name = w.name
    LEFT JOIN upserted u ON u.name = w.name
    UNION ALL
    SELECT r.name, 'removed' FROM removed r;
END;
$$;
