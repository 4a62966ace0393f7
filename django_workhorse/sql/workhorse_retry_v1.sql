-- An operator's retry: a failed or canceled job runs again with a fresh
-- attempt budget. Its outcome row becomes a ready runtime row in this
-- transaction (so the job still has exactly one of the two), its history
-- stays, and a 'retried' event records the outcome it came from.
--
-- status: 'changed' (now ready), 'unchanged' (the job is live or succeeded:
-- state says which), 'unknown' (no such job).
--
-- The attempt counter restarts at 0 (that is the fresh budget), but the
-- fence does not: it starts past every claim the job ever had, so a worker
-- still holding a ticket of an earlier run can never write over the new one.
--
-- A dependent still blocked on the job (all_finished or any_succeeded)
-- waits for its new end: its count of pending prerequisites goes up by one.
CREATE OR REPLACE FUNCTION workhorse_retry_v1(p_job_id bigint, p_reason text DEFAULT NULL)
RETURNS TABLE (status text, state text)
LANGUAGE plpgsql AS $$
DECLARE
    v_outcome workhorse_job_outcome%ROWTYPE;
    v_job     workhorse_job%ROWTYPE;
    v_state   text;
    v_claims  bigint;
BEGIN
    SELECT * INTO v_job FROM workhorse_job j WHERE j.id = p_job_id;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'unknown'::text, NULL::text;
        RETURN;
    END IF;
    DELETE FROM workhorse_job_outcome o
    WHERE o.job_id = p_job_id AND o.state IN ('failed', 'canceled')
    RETURNING * INTO v_outcome;
    IF NOT FOUND THEN
        SELECT coalesce(
            (SELECT rt.state FROM workhorse_job_runtime rt WHERE rt.job_id = p_job_id),
            (SELECT o.state FROM workhorse_job_outcome o WHERE o.job_id = p_job_id))
        INTO v_state;
        RETURN QUERY SELECT 'unchanged'::text, v_state;
        RETURN;
    END IF;
    SELECT count(*) INTO v_claims FROM workhorse_job_event e
    WHERE e.job_id = p_job_id AND e.kind = 'claimed';
    INSERT INTO workhorse_job_runtime (job_id, queue, priority, state, run_at, fence)
    VALUES (p_job_id, v_job.queue, v_job.priority, 'ready', now(),
            v_claims + v_outcome.attempts + v_outcome.stall_count);
    INSERT INTO workhorse_job_event (job_id, kind, attempt, data)
    VALUES (p_job_id, 'retried', 0,
            jsonb_strip_nulls(jsonb_build_object(
                'previous_state', v_outcome.state,
                'previous_attempts', v_outcome.attempts,
                'reason', p_reason)));
    UPDATE workhorse_job_runtime rt SET pending_dependencies = rt.pending_dependencies + 1
    WHERE rt.job_id = ANY (ARRAY(
        SELECT b.job_id FROM workhorse_job_runtime b
        WHERE b.job_id = ANY (ARRAY(SELECT d.job_id FROM workhorse_job_dependency d
                                    WHERE d.prerequisite_id = p_job_id))
          AND b.state = 'blocked'
        ORDER BY b.job_id
        FOR UPDATE));
    PERFORM pg_notify('workhorse:' || v_job.queue, '');
    RETURN QUERY SELECT 'changed'::text, 'ready'::text;
END;
$$;
