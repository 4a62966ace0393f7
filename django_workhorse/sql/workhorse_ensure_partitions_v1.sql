-- Creates the daily partitions of the history tables from p_from (a UTC day)
-- for p_days days, and returns how many it created. Idempotent; callers may
-- run it concurrently (an advisory lock serialises them). A day whose rows
-- already sit in the default partition is skipped with a NOTICE rather than
-- failing the sweep: those rows stay readable where they are.
--
-- SECURITY DEFINER: only the owner of the partitioned tables may add a
-- partition, and workers may run under a role without that right (see
-- docs/security.md). The function does nothing else, and its search_path is
-- fixed at installation (below).
--
-- Since it creates tables as the owner for whoever may call it, the days
-- are bounded to the window a worker can ask for: from yesterday (UTC) to
-- 367 days after today, PARTITION_DAYS_AHEAD's largest value (366) plus
-- the day the worker adds. A day outside it is refused (22023) and nothing
-- is created, so no caller can make owner-owned tables for any date, call
-- after call. The owner can create a partition outside the window with
-- CREATE TABLE ... PARTITION OF, as any DDL.
CREATE OR REPLACE FUNCTION workhorse_ensure_partitions_v1(
    p_from date DEFAULT (now() AT TIME ZONE 'UTC')::date - 1,
    p_days integer DEFAULT 9
) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    v_day     date;
    v_table   text;
    v_parent  text;
    v_created integer := 0;
BEGIN
    -- A worker asks for PARTITION_DAYS_AHEAD (at most 366) + 2 days.
    IF p_from IS NULL OR NOT p_days BETWEEN 0 AND 1000 OR p_days IS NULL THEN
        RAISE EXCEPTION 'workhorse_ensure_partitions_v1: p_from must be a date and p_days from 0 to 1000, got %, %',
            p_from, p_days USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_days > 0 AND (p_from < (now() AT TIME ZONE 'UTC')::date - 1
                       OR p_from + p_days - 1 > (now() AT TIME ZONE 'UTC')::date + 367) THEN
        RAISE EXCEPTION 'workhorse_ensure_partitions_v1: the days % to % are outside the window '
            'of % to % (UTC)', p_from, p_from + p_days - 1,
            (now() AT TIME ZONE 'UTC')::date - 1, (now() AT TIME ZONE 'UTC')::date + 367
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'partitions are made from yesterday to 367 days ahead (PARTITION_DAYS_AHEAD '
                         'is at most 366); the table owner can create others with CREATE TABLE '
                         '... PARTITION OF';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('workhorse_ensure_partitions'));
    FOR v_day IN SELECT generate_series(p_from, p_from + p_days - 1, interval '1 day')::date LOOP
        FOREACH v_parent IN ARRAY ARRAY['workhorse_job_event', 'workhorse_attempt_history'] LOOP
            v_table := v_parent || '_p' || to_char(v_day, 'YYYYMMDD');
            CONTINUE WHEN to_regclass(v_table) IS NOT NULL;
            BEGIN
                EXECUTE format(
                    'CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                    v_table, v_parent,
                    (v_day::timestamp AT TIME ZONE 'UTC'),
                    ((v_day + 1)::timestamp AT TIME ZONE 'UTC'));
                v_created := v_created + 1;
            EXCEPTION WHEN check_violation THEN
                RAISE NOTICE 'workhorse: % has rows for %, partition % not created',
                    v_parent || '_default', v_day, v_table;
            END;
        END LOOP;
    END LOOP;
    RETURN v_created;
END;
$$;

-- The schema it was installed in, then pg_temp, named last: left out of a
-- search_path, pg_temp is searched first for tables, so a caller's temporary
-- table (with a trigger on it) would stand in for a workhorse table and run
-- the caller's code as the owner.
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION workhorse_ensure_partitions_v1(date, integer)'
                   ' SET search_path = %I, pg_temp', current_schema());
END
$$;

-- PostgreSQL lets PUBLIC execute a new function: without this, any role that
-- can connect would run it as the owner. Only the roles granted EXECUTE
-- (manage.py workhorse_worker_role, docs/security.md) may.
REVOKE EXECUTE ON FUNCTION workhorse_ensure_partitions_v1(date, integer) FROM PUBLIC;
