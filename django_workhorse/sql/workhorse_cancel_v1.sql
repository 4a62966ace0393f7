-- An operator's cancel of a job that is not running: a blocked, scheduled
-- or ready job becomes a 'canceled' outcome in this transaction, with a
-- cancellation envelope as its error and a 'canceled' event; its blocked
-- dependents are settled in this transaction (workhorse_settle_dependents_v1).
--
-- A running (active) job is refused: stopping its handler needs the worker's
-- side of cancellation, which this version does not have, and marking the
-- row canceled while the handler runs on would be a lie.
--
-- status: 'changed', 'unchanged' (already terminal: state says how),
-- 'refused' (active), 'unknown' (no such job).
CREATE OR REPLACE FUNCTION workhorse_cancel_v1(p_job_id bigint, p_reason text DEFAULT NULL)
RETURNS TABLE (status text, state text)
LANGUAGE plpgsql AS $$
DECLARE
    v_rt    workhorse_job_runtime%ROWTYPE;
    v_state text;
BEGIN
    SELECT * INTO v_rt FROM workhorse_job_runtime rt WHERE rt.job_id = p_job_id FOR UPDATE;
    IF NOT FOUND THEN
        SELECT o.state INTO v_state FROM workhorse_job_outcome o WHERE o.job_id = p_job_id;
        RETURN QUERY SELECT CASE WHEN v_state IS NULL THEN 'unknown' ELSE 'unchanged' END,
                            v_state;
        RETURN;
    END IF;
    IF v_rt.state = 'active' THEN
        RETURN QUERY SELECT 'refused'::text, 'active'::text;
        RETURN;
    END IF;
    DELETE FROM workhorse_job_runtime rt WHERE rt.job_id = p_job_id;
    INSERT INTO workhorse_job_outcome (job_id, state, error, attempts, stall_count, finished_at)
    VALUES (p_job_id, 'canceled',
            jsonb_strip_nulls(jsonb_build_object(
                'type', 'JobCancelled',
                'message', coalesce(p_reason, 'canceled by an operator'),
                'reason', p_reason,
                'state_before', v_rt.state)),
            v_rt.attempt, v_rt.stall_count, now());
    INSERT INTO workhorse_job_event (job_id, kind, attempt, data)
    VALUES (p_job_id, 'canceled', v_rt.attempt,
            jsonb_strip_nulls(jsonb_build_object('state_before', v_rt.state,
                                                 'reason', p_reason)));
    PERFORM workhorse_settle_dependents_v1(ARRAY[p_job_id]);
    RETURN QUERY SELECT 'changed'::text, 'canceled'::text;
END;
$$;
