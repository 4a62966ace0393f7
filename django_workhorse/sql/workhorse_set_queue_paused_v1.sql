-- Pauses or resumes a queue through workhorse_queue.paused, which the claim
-- honours: a paused queue hands out nothing, and running jobs finish. On
-- resume the queue's NOTIFY channel wakes idle workers so that they claim at
-- once instead of at their next poll.
--
-- status: 'changed' or 'unchanged' (it already was); paused: the new flag.
CREATE OR REPLACE FUNCTION workhorse_set_queue_paused_v1(p_queue text, p_paused boolean)
RETURNS TABLE (status text, paused boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_before boolean;
BEGIN
    IF p_queue IS NULL OR p_queue !~ '^[A-Za-z0-9_][A-Za-z0-9_.-]*$' OR length(p_queue) > 53 THEN
        RAISE EXCEPTION 'workhorse_set_queue_paused_v1: % is not a queue name', quote_nullable(p_queue)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_paused IS NULL THEN
        RAISE EXCEPTION 'workhorse_set_queue_paused_v1: p_paused must be true or false'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT wq.paused INTO v_before FROM workhorse_queue wq WHERE wq.name = p_queue FOR UPDATE;
    IF coalesce(v_before, false) = p_paused THEN
        RETURN QUERY SELECT 'unchanged'::text, p_paused;
        RETURN;
    END IF;
    INSERT INTO workhorse_queue (name, paused, updated_at) VALUES (p_queue, p_paused, now())
    ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at;
    IF NOT p_paused THEN
        PERFORM pg_notify('workhorse:' || p_queue, '');
    END IF;
    RETURN QUERY SELECT 'changed'::text, p_paused;
END;
$$;
