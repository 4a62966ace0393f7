-- An operator stops a filter-wide action. A queued action ends 'canceled'
-- at once; a running one is flagged, and its job stops after the batch it
-- is in (this statement waits for that batch to commit: the batch holds the
-- action's row). Jobs already acted on stay as they are.
--
-- status: 'requested' (running: it stops after its batch), 'changed'
-- (queued: canceled now), 'unchanged' (it had ended: state says how),
-- 'unknown' (no such action).
CREATE OR REPLACE FUNCTION workhorse_bulk_cancel_v1(p_action_id bigint, p_by text DEFAULT NULL)
RETURNS TABLE (status text, state text)
LANGUAGE plpgsql AS $$
DECLARE
    v_status text;
BEGIN
    SELECT a.status INTO v_status FROM workhorse_bulk_action a
     WHERE a.id = p_action_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'unknown'::text, NULL::text;
    ELSIF v_status IN ('finished', 'canceled') THEN
        RETURN QUERY SELECT 'unchanged'::text, v_status;
    ELSIF v_status = 'queued' THEN
        UPDATE workhorse_bulk_action a
           SET status = 'canceled', finished_at = clock_timestamp(),
               cancel_requested_at = clock_timestamp(), canceled_by = p_by
         WHERE a.id = p_action_id;
        RETURN QUERY SELECT 'changed'::text, 'canceled'::text;
    ELSE
        UPDATE workhorse_bulk_action a
           SET cancel_requested_at = coalesce(a.cancel_requested_at, clock_timestamp()),
               canceled_by = coalesce(a.canceled_by, p_by)
         WHERE a.id = p_action_id;
        RETURN QUERY SELECT 'requested'::text, v_status;
    END IF;
END;
$$;
