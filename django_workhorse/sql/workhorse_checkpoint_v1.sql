-- Records one completed stage of a running job (ctx.checkpoint), fenced:
-- only the run that holds the job, (p_owner, p_fence) on an active runtime
-- row, may write. Returns ok = false and writes nothing for anyone else (the
-- lease was lost: recovered, claimed again, finished or canceled), which the
-- worker turns into a stopped run. cancel_requested tells the run that an
-- operator asked to cancel the job; the stage is recorded all the same.
--
-- The owner probe takes the runtime row FOR SHARE until this one-statement
-- transaction commits: stall recovery, a claim and every finish update that
-- row, so none of them can slip between the fence check and the insert, and
-- a stale run can never add a stage after its job was taken from it. The
-- heartbeat (FOR UPDATE) waits for this insert at most.
CREATE OR REPLACE FUNCTION workhorse_checkpoint_v1(
    p_job_id bigint,
    p_owner text,
    p_fence bigint,
    p_name text,
    p_result jsonb
) RETURNS TABLE (ok boolean, cancel_requested boolean)
-- Index paths whatever the statistics say, for the life of a session's
-- cached plans (docs/sql.md, "Plans that do not depend on statistics").
LANGUAGE plpgsql SET enable_seqscan = off AS $$
-- PL/pgSQL, not LANGUAGE sql: PostgreSQL caches a PL/pgSQL statement's plan
-- for the session, while a SQL function's body is planned on every call.
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH owned AS (
        SELECT rt.job_id, rt.attempt, rt.cancel_requested
        FROM workhorse_job_runtime rt
        WHERE rt.job_id = p_job_id AND rt.fence = p_fence AND rt.worker_id = p_owner
        FOR SHARE
    ),
    -- The run loaded the job's stages after its claim, and no earlier run
    -- can write since (the fence), so a name already stored can only be
    -- this run's own: the newest value stands.
    written AS (
        INSERT INTO workhorse_job_checkpoint AS c (job_id, name, kind, result, written_at, attempt)
        SELECT o.job_id, p_name, 'checkpoint', p_result, now(), o.attempt FROM owned o
        ON CONFLICT (job_id, name) DO UPDATE
            SET kind = 'checkpoint', result = EXCLUDED.result,
                written_at = EXCLUDED.written_at, attempt = EXCLUDED.attempt
    )
    SELECT o.job_id IS NOT NULL, coalesce(o.cancel_requested, false)
    FROM (SELECT 1) one LEFT JOIN owned o ON true;
END;
$$;
