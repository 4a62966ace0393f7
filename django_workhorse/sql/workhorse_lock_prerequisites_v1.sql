-- Holds the jobs a new dependent is about to name until the caller's
-- transaction ends, and returns those of p_ids that no job has (ascending).
--
-- Python's enqueue of a job with depends_on calls this, then
-- workhorse_enqueue_many_v1, in one transaction. Without the hold,
-- retention could delete a finished prerequisite between the two
-- statements, and the enqueue would then refuse the job with an error
-- that aborts the caller's transaction, where the documented answer is
-- UnknownDependencyError with the transaction intact. Retention picks the
-- finished jobs it deletes FOR UPDATE SKIP LOCKED, so it passes over an
-- outcome row held here (KEY SHARE) and takes it on a later run; a
-- prerequisite that retention is deleting at this moment is waited for,
-- then reported missing. Runtime rows are held too (a finish waits, as it
-- would for the enqueue's own hold), first and in id order like every lock
-- on them; the outcome rows after, in a statement of their own, so a
-- prerequisite that ended while this waited is found where it went.
CREATE OR REPLACE FUNCTION workhorse_lock_prerequisites_v1(p_ids bigint[])
RETURNS TABLE (missing_id bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_live bigint[];
    v_done bigint[];
BEGIN
    v_live := ARRAY(
        SELECT rt.job_id FROM workhorse_job_runtime rt
        WHERE rt.job_id = ANY (p_ids)
        ORDER BY rt.job_id
        FOR KEY SHARE);
    v_done := ARRAY(
        SELECT o.job_id FROM workhorse_job_outcome o
        WHERE o.job_id = ANY (p_ids) AND o.job_id <> ALL (v_live)
        ORDER BY o.job_id
        FOR KEY SHARE);
    -- A job in neither (between its two rows in a concurrent retry) still
    -- exists; workhorse_enqueue_many_v1 sorts that case out.
    RETURN QUERY
    SELECT DISTINCT u.id FROM unnest(p_ids) AS u(id)
    WHERE u.id <> ALL (v_live) AND u.id <> ALL (v_done)
      AND NOT EXISTS (SELECT 1 FROM workhorse_job j WHERE j.id = u.id)
    ORDER BY u.id;
END;
$$;
