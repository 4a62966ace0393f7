-- The recorded stages and sleeps of one job, in the order they were written:
-- what a run replays (loaded on its first checkpoint or sleep) and what
-- the operator's job page shows. One index range scan of the primary key.
CREATE OR REPLACE FUNCTION workhorse_get_checkpoints_v1(p_job_id bigint)
RETURNS TABLE (name text, kind text, result jsonb, written_at timestamptz, attempt integer)
LANGUAGE sql STABLE AS $$
    SELECT c.name, c.kind, c.result, c.written_at, c.attempt
    FROM workhorse_job_checkpoint c
    WHERE c.job_id = p_job_id
    ORDER BY c.written_at, c.name
$$;
