-- The keys (workhorse_worker_key_v1) of the workers whose liveness proof is
-- current: a session of this database whose application name a pulse set
-- (workhorse_pulse_v1) to a time still ahead of clock_timestamp(). A session
-- that ended is gone from pg_stat_activity, and with it its proof; a frozen
-- process's proof runs out by itself. Reading pg_stat_activity takes no
-- lock and needs no privilege for application names.
CREATE OR REPLACE FUNCTION workhorse_live_workers_v1()
RETURNS text[]
-- PL/pgSQL, not LANGUAGE sql: its plan is kept for the session, where a SQL
-- function's body was planned at every call (0.5 ms of a pulse's 0.6).
-- pg_stat_get_activity() is what the pg_stat_activity view reads, without
-- the view's joins.
LANGUAGE plpgsql AS $$
BEGIN
    RETURN (
        SELECT coalesce(array_agg(DISTINCT p.worker_key), '{}')
        FROM (
            SELECT split_part(a.application_name, ' ', 3) AS worker_key,
                   -- Cast only what the pattern admits (at most 15 digits).
                   CASE WHEN a.application_name ~ '^workhorse-listener [0-9]{1,15} [0-9a-f]{16}$'
                        THEN split_part(a.application_name, ' ', 2)::bigint END AS until_ms
            FROM pg_stat_get_activity(NULL) a
            WHERE a.datid = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
              AND a.application_name LIKE 'workhorse-listener %'
        ) p
        WHERE p.until_ms > extract(epoch FROM clock_timestamp()) * 1000
    );
END;
$$;
