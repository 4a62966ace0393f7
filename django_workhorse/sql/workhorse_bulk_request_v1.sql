-- Ask for a filter-wide action: retry (p_action 'retry') or cancel every job
-- matching the job list's filter, in the states p_states, walked in that order.
--
-- The action is bound to the jobs that exist now: bound_id is the newest
-- job id, and the walk never touches a job above it (job ids grow with
-- creation), so a job enqueued after this call is never acted on.
--
-- The filter is the action's idempotency key: while an action with the
-- same action and filter is queued or running, asking again writes
-- nothing and returns that action's id with inserted false (the partial
-- unique index workhorse_bulk_action_live_filter decides a race). Once it
-- ended, the same filter may be asked for again.
--
-- p_finished_before: finished and canceled actions that ended before it are
-- deleted first (their retention window, WORKHORSE['RETENTION']['FINISHED_JOBS']).
CREATE OR REPLACE FUNCTION workhorse_bulk_request_v1(
    p_action text,
    p_states text[],
    p_queue text DEFAULT NULL,
    p_name text DEFAULT NULL,
    p_state text DEFAULT NULL,
    p_created_after timestamptz DEFAULT NULL,
    p_created_before timestamptz DEFAULT NULL,
    p_reason text DEFAULT NULL,
    p_by text DEFAULT NULL,
    p_permission text DEFAULT NULL,
    p_batch_size integer DEFAULT 1000,
    p_finished_before timestamptz DEFAULT NULL
) RETURNS TABLE (action_id bigint, inserted boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_key text;
    v_id  bigint;
BEGIN
    IF p_action IS NULL OR p_action NOT IN ('retry', 'cancel') THEN
        RAISE EXCEPTION 'workhorse_bulk_request_v1: p_action must be retry or cancel, got %',
            p_action USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_states IS NULL OR cardinality(p_states) = 0 OR NOT p_states <@ (CASE p_action
           WHEN 'retry' THEN ARRAY['failed', 'canceled']
           ELSE ARRAY['blocked', 'scheduled', 'ready', 'active'] END) THEN
        RAISE EXCEPTION 'workhorse_bulk_request_v1: % cannot change jobs in states %',
            p_action, p_states USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_finished_before IS NOT NULL THEN
        DELETE FROM workhorse_bulk_action
         WHERE status IN ('finished', 'canceled') AND finished_at < p_finished_before;
    END IF;
    v_key := md5(jsonb_build_array(
        p_action, p_queue, p_name, p_state, p_created_after, p_created_before)::text);
    LOOP
        INSERT INTO workhorse_bulk_action AS a (
            action, queue, name, state, created_after, created_before, states, filter_key,
            reason, requested_by, permission, bound_id, batch_size)
        VALUES (
            p_action, p_queue, p_name, p_state, p_created_after, p_created_before, p_states,
            v_key, p_reason, p_by, p_permission,
            coalesce((SELECT max(j.id) FROM workhorse_job j), 0), p_batch_size)
        ON CONFLICT (filter_key) WHERE status IN ('queued', 'running') DO NOTHING
        RETURNING a.id INTO v_id;
        IF v_id IS NOT NULL THEN
            RETURN QUERY SELECT v_id, true;
            RETURN;
        END IF;
        SELECT a.id INTO v_id FROM workhorse_bulk_action a
         WHERE a.filter_key = v_key AND a.status IN ('queued', 'running');
        IF v_id IS NOT NULL THEN
            RETURN QUERY SELECT v_id, false;
            RETURN;
        END IF;
        -- The live one ended between the insert and the read: ask again.
    END LOOP;
END;
$$;
