-- The tables with churn that a worker's vacuum turn should VACUUM now, and
-- those this role may not vacuum (docs/worker.md#vacuum).
--
-- Why a worker vacuums at all: workhorse_job_runtime takes an insert at
-- enqueue, an update at every claim and heartbeat, and a delete at every
-- finish, so under load it is mostly dead rows. Only VACUUM tells the
-- free-space map about pruned space and removes dead entries from the claim's
-- partial indexes. The sustained benchmark (800 jobs/s, two workers) on a
-- server with autovacuum off saw the table grow ~11 MB a minute, the ready
-- and lease indexes fill with dead entries, and the workers collapse after
-- ~3 minutes; with autovacuum on it stayed flat. A queue must not depend on
-- when autovacuum last ran.
--
-- The tables with churn, each written on a path that runs per job or per claim:
--   * workhorse_job_runtime: every job, as above;
--   * workhorse_queue: every claim of a rate-limited queue rewrites the
--     queue's row (its claim record, in the TOAST table once it is long);
--   * workhorse_schedule: every slot a sweep fires rewrites the schedule's row.
-- The tables retention deletes from (job, outcome, query, dependency,
-- checkpoint) are not here: they are large, their dead rows come in hourly
-- batches, and a VACUUM of them can take as long as they are big, which
-- would hold up the turns that keep the tables above small.
--
-- A table is due when its dead tuples are more than p_min_dead and more than
-- p_min_dead_fraction of live + dead, and no VACUUM or autovacuum of it
-- ended within p_quiet_for (another worker's turn, or autovacuum, has just
-- done it). A table's TOAST table is vacuumed with it, so its chunks count
-- with its rows. The counts are the cumulative statistics
-- (pg_stat_user_tables), which a session reports at the end of its
-- transactions, up to a second or so later when it is busy; a turn that
-- reads them a little late leaves the table for the next turn.
--
-- may_vacuum: whether the calling role may VACUUM the table. VACUUM of a
-- table it may not vacuum only warns and does nothing, so the worker asks
-- first. A role may when it has the privileges of the table's owner or of
-- the database's owner, and from PostgreSQL 17 when it holds MAINTAIN on the
-- table (pg_maintain, say). A table this role may not vacuum is returned
-- whether or not it is due, so that the worker can say once that
-- autovacuum must look after it.
--
-- VACUUM cannot run inside a function (or any transaction block): the
-- worker runs it itself, one statement per table, on an autocommit
-- connection, under the session advisory lock hashtext('workhorse_vacuum')
-- so that one worker of a fleet vacuums at a time (docs/sql.md#advisory-locks).
--
-- p_quiet_for has no default: the worker passes its VACUUM_INTERVAL. The
-- thresholds are spelled here only.
CREATE OR REPLACE FUNCTION workhorse_vacuum_due_v1(
    p_quiet_for interval,
    p_min_dead bigint DEFAULT 1000,
    p_min_dead_fraction double precision DEFAULT 0.2
) RETURNS TABLE (
    table_name text, dead_tuples bigint, live_tuples bigint, due boolean, may_vacuum boolean
)
LANGUAGE sql STABLE AS $$
    WITH churn AS (
        SELECT c.relname::text AS name, c.oid, c.relowner,
               pg_stat_get_dead_tuples(c.oid) + pg_stat_get_dead_tuples(c.reltoastrelid) AS dead,
               pg_stat_get_live_tuples(c.oid) + pg_stat_get_live_tuples(c.reltoastrelid) AS live,
               greatest(pg_stat_get_last_vacuum_time(c.oid),
                        pg_stat_get_last_autovacuum_time(c.oid)) AS last_vacuum
        FROM pg_class c
        WHERE c.relnamespace = current_schema()::regnamespace
          AND c.relname IN ('workhorse_job_runtime', 'workhorse_queue', 'workhorse_schedule')
          AND c.relkind = 'r'
    ),
    judged AS (
        SELECT ch.name, ch.dead, ch.live,
               ch.dead > p_min_dead
                   AND ch.dead > p_min_dead_fraction * (ch.dead + ch.live)
                   AND (ch.last_vacuum IS NULL OR ch.last_vacuum < now() - p_quiet_for) AS due,
               -- The server's own rule (vacuum_is_permitted_for_relation).
               -- The CASE is folded at planning, so PostgreSQL 15 and 16 never
               -- see the MAINTAIN privilege they do not know.
               pg_has_role((SELECT d.datdba FROM pg_database d
                            WHERE d.datname = current_database()), 'USAGE')
                   OR CASE WHEN current_setting('server_version_num')::integer >= 170000
                           THEN has_table_privilege(ch.oid, 'MAINTAIN')
                           ELSE pg_has_role(ch.relowner, 'USAGE') END AS may_vacuum
        FROM churn ch
    )
    SELECT j.name, j.dead, j.live, j.due, j.may_vacuum FROM judged j
    WHERE j.due OR NOT j.may_vacuum
    ORDER BY j.name
$$;
