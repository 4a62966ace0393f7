-- An operator's cancel.
--
-- A blocked, scheduled or ready job becomes a 'canceled' outcome in this
-- transaction, with a cancellation envelope as its error ({type, message,
-- reason, by, at, state_before}: at is the database's now(), by and reason
-- are the caller's and left out when NULL) and a 'canceled' event (with
-- state_before, reason and by); its blocked dependents are settled in this
-- transaction (workhorse_settle_dependents_v1).
--
-- A running (active) job is flagged (cancel_requested) and its worker is told
-- on commit by a NOTIFY on the control channel 'workhorse_control', payload
-- {"action": "cancel", "job_id", "worker", "fence"}; the heartbeat's reply carries the flag too,
-- for a worker that missed the NOTIFY. The worker stops the handler and acks
-- the job 'canceled' through workhorse_fail_many_v1 (kind 'canceled'); a
-- release or a stall recovery of a flagged job ends it canceled as well, so
-- a cancel is never undone by putting the job back in line. A handler that
-- finishes before its worker hears of the cancel keeps its result. A second
-- cancel of a job still running asks again (and notifies again).
-- The reason and by (who asked) are kept in a 'cancel_requested' event (its
-- own at is when); the worker's canceled outcome carries the reason
-- (workhorse_fail_many_v1 copies it from that event).
--
-- status: 'changed' (canceled now), 'requested' (active: its worker was
-- asked), 'unchanged' (already terminal: state says how), 'unknown' (no such
-- job).
DROP FUNCTION IF EXISTS workhorse_cancel_v1(bigint, text);
CREATE OR REPLACE FUNCTION workhorse_cancel_v1(
    p_job_id bigint,
    p_reason text DEFAULT NULL,
    p_by text DEFAULT NULL
) RETURNS TABLE (status text, state text)
-- Index paths whatever the statistics say, for the life of a session's
-- cached plans (docs/sql.md, "Plans that do not depend on statistics").
LANGUAGE plpgsql SET enable_seqscan = off AS $$
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
        UPDATE workhorse_job_runtime rt SET cancel_requested = true WHERE rt.job_id = p_job_id;
        INSERT INTO workhorse_job_event (job_id, kind, attempt, worker_id, data)
        VALUES (p_job_id, 'cancel_requested', v_rt.attempt, v_rt.worker_id,
                jsonb_strip_nulls(jsonb_build_object('reason', p_reason, 'by', p_by)));
        PERFORM pg_notify('workhorse_control', jsonb_build_object(
            'action', 'cancel', 'job_id', p_job_id, 'worker', v_rt.worker_id,
            'fence', v_rt.fence)::text);
        RETURN QUERY SELECT 'requested'::text, 'active'::text;
        RETURN;
    END IF;
    -- The runtime -> outcome move, its event and the dependents settled: the
    -- one home of the transition (workhorse_end_runs_v1). No attempt closes:
    -- a job that is not running has none open. The row is locked above.
    PERFORM workhorse_end_runs_v1(
        ARRAY[p_job_id], NULL, NULL, ARRAY['canceled'], NULL,
        ARRAY[jsonb_strip_nulls(jsonb_build_object(
            'type', 'django_workhorse.exceptions.JobCancelled',
            'message', coalesce(p_reason, 'canceled by an operator'),
            'reason', p_reason,
            'by', p_by,
            'at', now(),
            'state_before', v_rt.state))],
        NULL, NULL,
        ARRAY[jsonb_strip_nulls(jsonb_build_object('state_before', v_rt.state,
                                                   'reason', p_reason, 'by', p_by))]);
    RETURN QUERY SELECT 'changed'::text, 'canceled'::text;
END;
$$;
