-- An operator's "run it now": a scheduled job becomes ready at once (its
-- run_at set to now), with a 'promoted' event naming the operator as the
-- cause, and the queue's workers are woken.
--
-- status: 'changed', 'unchanged' (not scheduled: state says what it is),
-- 'unknown' (no such job).
CREATE OR REPLACE FUNCTION workhorse_promote_v1(p_job_id bigint)
RETURNS TABLE (status text, state text)
-- Index paths whatever the statistics say, for the life of a session's
-- cached plans (docs/sql.md, "Plans that do not depend on statistics").
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    v_queue   text;
    v_attempt integer;
    v_state   text;
BEGIN
    UPDATE workhorse_job_runtime rt SET state = 'ready', run_at = now()
    -- Not `rt.state = 'scheduled'`: that matches the partial index of
    -- scheduled jobs, which a plan made on empty tables reads whole
    -- (docs/sql.md, "Plans that do not depend on statistics").
    WHERE rt.job_id = p_job_id AND (rt.state = 'scheduled') IS TRUE
    RETURNING rt.queue, rt.attempt INTO v_queue, v_attempt;
    IF FOUND THEN
        INSERT INTO workhorse_job_event (job_id, kind, attempt, data)
        VALUES (p_job_id, 'promoted', v_attempt, '{"by": "operator"}');
        PERFORM pg_notify('workhorse:' || v_queue, '');
        RETURN QUERY SELECT 'changed'::text, 'ready'::text;
        RETURN;
    END IF;
    SELECT coalesce(
        (SELECT rt.state FROM workhorse_job_runtime rt WHERE rt.job_id = p_job_id),
        (SELECT o.state FROM workhorse_job_outcome o WHERE o.job_id = p_job_id))
    INTO v_state;
    RETURN QUERY SELECT CASE WHEN v_state IS NULL THEN 'unknown' ELSE 'unchanged' END, v_state;
END;
$$;
