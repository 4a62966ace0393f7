-- One bounded step of retention. Returns what it did (or, with p_dry_run,
-- what it would do) as rows (action, target, rows):
--   * 'drop_partition': a day partition of job_event or attempt_history
--     whose whole day ends before p_history_before is dropped. Dropping is
--     O(1) whatever the partition holds; rows is NULL (not counted). A step
--     that dropped a partition stops there and commits: the drop holds an
--     exclusive lock on the parent, which every event or attempt insert of
--     the fleet waits for, so it is held for no longer than the drops.
--   * 'drop_deferred': the partition could not be locked within a second
--     (a long reader holds it); it is left for a later step. Without the
--     bound, the waiting drop would queue every insert behind that reader.
--   * 'delete_default': up to p_limit rows older than p_history_before are
--     deleted from each default partition (rows that arrived when their
--     day's partition was missing).
--   * 'delete_counters': up to p_limit rows of each of the dashboard's
--     counters (workhorse_queue_minute, workhorse_failure_hour) older than
--     p_history_before are deleted, and as many workers last seen before it
--     (workhorse_worker); rows is the larger of the two counts
--     (what a dry run counts: both added).
--   * 'delete_jobs': up to p_limit finished jobs whose outcome is older than
--     p_jobs_before lose their job, outcome, query, dependency and checkpoint rows.
--   * 'busy': another session is pruning; nothing was done.
-- Live jobs (those with a runtime row) are never touched. Callers repeat
-- the step while a delete returns p_limit rows; every step is its own
-- transaction, so locks are short and a stop loses nothing.
--
-- One pruner at a time across the fleet: a transaction advisory lock,
-- taken without waiting, so a second worker skips its turn instead of
-- queueing behind the first.
--
-- SECURITY DEFINER: only the owner of the partitioned tables may drop a
-- partition, and workers run this under a role without that right
-- (docs/security.md); its search_path is fixed at installation (below).
-- So a cut-off after now() (the transaction's start) is refused (22023)
-- before anything is touched: a partition goes only when its whole day is
-- before the cut-off, so today's and future days' partitions are never
-- dropped, and no job that finishes after this step began is deleted. How
-- far back a worker retires is its RETENTION settings, which this function
-- cannot see: the grant to run it is the grant to retire past history.
CREATE OR REPLACE FUNCTION workhorse_prune_v1(
    p_history_before timestamptz,
    p_jobs_before timestamptz,
    p_limit integer DEFAULT 10000,
    p_dry_run boolean DEFAULT false
) RETURNS TABLE (action text, target text, rows bigint)
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    v_part    record;
    v_count   bigint;
    v_parent  text;
    v_dropped integer := 0;
    v_timeout text := current_setting('lock_timeout');
BEGIN
    IF p_history_before IS NULL OR p_jobs_before IS NULL
       OR p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'workhorse_prune_v1: both cut-offs and a positive p_limit are needed'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_history_before > now() OR p_jobs_before > now() THEN
        RAISE EXCEPTION 'workhorse_prune_v1: the cut-offs % (history) and % (finished jobs) '
            'must not be after now (%)', p_history_before, p_jobs_before, now()
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'a cut-off is now() minus a RETENTION window; today''s and future '
                         'partitions are never dropped';
    END IF;
    IF NOT pg_try_advisory_xact_lock(hashtext('workhorse_prune')) THEN
        RETURN QUERY SELECT 'busy'::text, NULL::text, NULL::bigint;
        RETURN;
    END IF;

    -- Day partitions are named <parent>_pYYYYMMDD by ensure_partitions; the
    -- day is read from the name, and the partition goes once the whole day
    -- is past the cut-off.
    FOR v_part IN
        SELECT c.relname::text AS child, p.relname::text AS parent
        FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_class p ON p.oid = i.inhparent
        WHERE p.relname IN ('workhorse_job_event', 'workhorse_attempt_history')
          AND c.relname ~ '_p[0-9]{8}$'
          AND p.relnamespace = c.relnamespace
          AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
          AND (to_date(right(c.relname, 8), 'YYYYMMDD') + 1)::timestamp AT TIME ZONE 'UTC'
              <= p_history_before
        ORDER BY c.relname
    LOOP
        IF p_dry_run THEN
            RETURN QUERY SELECT 'drop_partition'::text, v_part.child, NULL::bigint;
            CONTINUE;
        END IF;
        PERFORM set_config('lock_timeout', '1s', true);
        BEGIN
            EXECUTE format('DROP TABLE %I', v_part.child);
            v_dropped := v_dropped + 1;
            RETURN QUERY SELECT 'drop_partition'::text, v_part.child, NULL::bigint;
        EXCEPTION WHEN lock_not_available THEN
            -- The reader holds the parent, so its other partitions would
            -- wait as long: leave them all for a later step.
            PERFORM set_config('lock_timeout', v_timeout, true);
            RETURN QUERY SELECT 'drop_deferred'::text, v_part.child, NULL::bigint;
            EXIT;
        END;
        PERFORM set_config('lock_timeout', v_timeout, true);
    END LOOP;
    IF v_dropped > 0 THEN
        RETURN;  -- commit the drops now; the next step deletes
    END IF;

    FOREACH v_parent IN ARRAY ARRAY['workhorse_job_event', 'workhorse_attempt_history'] LOOP
        IF p_dry_run THEN
            EXECUTE format(
                'SELECT count(*) FROM (SELECT 1 FROM %I WHERE %I < $1 LIMIT $2) t',
                v_parent || '_default',
                CASE v_parent WHEN 'workhorse_job_event' THEN 'at' ELSE 'finished_at' END)
            INTO v_count USING p_history_before, p_limit;
        ELSE
            EXECUTE format(
                'WITH gone AS (DELETE FROM %1$I WHERE ctid = ANY (ARRAY('
                '    SELECT ctid FROM %1$I WHERE %2$I < $1 LIMIT $2)) RETURNING 1)'
                ' SELECT count(*) FROM gone',
                v_parent || '_default',
                CASE v_parent WHEN 'workhorse_job_event' THEN 'at' ELSE 'finished_at' END)
            INTO v_count USING p_history_before, p_limit;
        END IF;
        IF v_count > 0 THEN
            RETURN QUERY SELECT 'delete_default'::text, v_parent || '_default', v_count;
        END IF;
    END LOOP;

    -- The dashboard's counters of finished jobs (queue_counts_v1.sql) are
    -- history too: those of minutes and hours before p_history_before go,
    -- up to p_limit rows of each table (read in key order, minute or hour
    -- first).
    IF p_dry_run THEN
        SELECT (SELECT count(*) FROM (SELECT 1 FROM workhorse_queue_minute m
                                      WHERE m.minute < p_history_before LIMIT p_limit) t)
             + (SELECT count(*) FROM (SELECT 1 FROM workhorse_failure_hour f
                                      WHERE f.hour < p_history_before LIMIT p_limit) t)
        INTO v_count;
    ELSE
        WITH gone_minutes AS (
            DELETE FROM workhorse_queue_minute m
            WHERE (m.minute, m.queue, m.shard) IN (
                SELECT m2.minute, m2.queue, m2.shard FROM workhorse_queue_minute m2
                WHERE m2.minute < p_history_before ORDER BY m2.minute LIMIT p_limit)
            RETURNING 1
        ),
        gone_hours AS (
            DELETE FROM workhorse_failure_hour f
            WHERE (f.hour, f.name, f.error_type, f.shard) IN (
                SELECT f2.hour, f2.name, f2.error_type, f2.shard FROM workhorse_failure_hour f2
                WHERE f2.hour < p_history_before ORDER BY f2.hour LIMIT p_limit)
            RETURNING 1
        ),
        -- Workers not seen since the cut-off died without saying so.
        gone_workers AS (
            DELETE FROM workhorse_worker w
            WHERE w.worker_id IN (
                SELECT w2.worker_id FROM workhorse_worker w2
                WHERE w2.last_seen_at < p_history_before LIMIT p_limit)
            RETURNING 1
        )
        SELECT greatest((SELECT count(*) FROM gone_minutes), (SELECT count(*) FROM gone_hours),
                        (SELECT count(*) FROM gone_workers))
        INTO v_count;
    END IF;
    IF v_count > 0 THEN
        RETURN QUERY SELECT 'delete_counters'::text, 'workhorse_queue_minute'::text, v_count;
    END IF;

    IF p_dry_run THEN
        SELECT count(*) INTO v_count FROM (
            SELECT 1 FROM workhorse_job_outcome o WHERE o.finished_at < p_jobs_before LIMIT p_limit
        ) t;
    ELSE
        -- Outcome rows exist only for finished jobs, so a job picked here has
        -- no runtime row: live jobs cannot be reached from this side.
        WITH picked AS (
            SELECT o.job_id FROM workhorse_job_outcome o
            WHERE o.finished_at < p_jobs_before
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        ),
        outcome AS (
            DELETE FROM workhorse_job_outcome o USING picked p WHERE o.job_id = p.job_id
            RETURNING o.job_id
        ),
        query AS (
            DELETE FROM workhorse_job_query q USING outcome d WHERE q.job_id = d.job_id
        ),
        -- A job's edges to its prerequisites go with it; edges of a live
        -- dependent to a pruned prerequisite stay (that one has been counted).
        edges AS (
            DELETE FROM workhorse_job_dependency e USING outcome d WHERE e.job_id = d.job_id
        ),
        job AS (
            DELETE FROM workhorse_job j USING outcome d WHERE j.id = d.job_id
        ),
        -- A job's checkpoints and sleeps go with it.
        checkpoint AS (
            DELETE FROM workhorse_job_checkpoint c USING outcome d WHERE c.job_id = d.job_id
        )
        SELECT count(*) INTO v_count FROM outcome;
    END IF;
    IF v_count > 0 THEN
        RETURN QUERY SELECT 'delete_jobs'::text, 'workhorse_job'::text, v_count;
    END IF;
END;
$$;

-- The schema it was installed in, then pg_temp, named last: left out of a
-- search_path, pg_temp is searched first for tables, so a caller's temporary
-- table (with a trigger on it) would stand in for a workhorse table and run
-- the caller's code as the owner.
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION workhorse_prune_v1(timestamptz, timestamptz, integer, boolean)'
                   ' SET search_path = %I, pg_temp', current_schema());
END
$$;

-- PostgreSQL lets PUBLIC execute a new function: without this, any role that
-- can connect would run it as the owner. Only the roles granted EXECUTE
-- (manage.py workhorse_worker_role, docs/security.md) may.
REVOKE EXECUTE ON FUNCTION workhorse_prune_v1(timestamptz, timestamptz, integer, boolean) FROM PUBLIC;
