-- An operator's retry: a failed or canceled job runs again with a fresh
-- attempt budget. Its outcome row becomes a runtime row in this transaction
-- (so the job still has exactly one of the two), its history stays, and a
-- 'retried' event records the outcome it came from.
--
-- A job with prerequisites is judged again by its dependency_policy against
-- the prerequisites as they are now (as workhorse_settle_dependents_v1
-- would): it becomes 'blocked', waiting for those that are still live
-- (pending_dependencies counts them), when its policy can still be met by
-- them, and 'ready' when the policy is met already. When the policy can no
-- longer be met (all_succeeded with a prerequisite that failed or was
-- canceled, any_succeeded with every prerequisite ended without a success)
-- the retry is refused: status 'unchanged', and prerequisite /
-- prerequisite_state name the first prerequisite that stands in the way
-- (retry that one first, and the dependent waits for it). p_ignore_dependencies
-- is the operator's override: the job is ready at once, whatever its
-- prerequisites are doing. A prerequisite deleted by retention has ended long
-- ago and is not held against the policy.
--
-- The live prerequisites' runtime rows and the ended ones' outcome rows are
-- held FOR KEY SHARE until commit: a prerequisite cannot end (nor be retried)
-- between this count and the dependent's new runtime row becoming visible
-- to the settle of its end, so no end goes uncounted.
--
-- status: 'changed' (state: 'ready' or 'blocked'), 'unchanged' (the job is
-- live or succeeded: state says which; or its dependency policy can no
-- longer be met: prerequisite says why), 'unknown' (no such job).
--
-- The attempt counter restarts at 0 (that is the fresh budget), but the
-- fence never goes back. A claim adds one to the job's fence; a retry starts
-- the new life at its own floor, nextval(workhorse_job_life_seq) * 2^32,
-- above every fence the job had: each earlier life began at a lower floor
-- (the sequence only grows, and enqueue starts at 0) and took fewer than
-- 2^32 claims (at a claim a millisecond, 50 days of claims without ending).
-- This reads no history, which retention drops. A worker still holding a
-- ticket of an earlier life can never write over the new one.
--
-- A dependent still blocked on the job (all_finished or any_succeeded)
-- waits for its new end: its count of pending prerequisites goes up by one.
DROP FUNCTION IF EXISTS workhorse_retry_v1(bigint, text);
CREATE OR REPLACE FUNCTION workhorse_retry_v1(
    p_job_id bigint,
    p_reason text DEFAULT NULL,
    p_ignore_dependencies boolean DEFAULT false
) RETURNS TABLE (status text, state text, prerequisite bigint, prerequisite_state text)
-- Index paths whatever the statistics say, for the life of a session's
-- cached plans (docs/sql.md, "Plans that do not depend on statistics").
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    v_outcome  workhorse_job_outcome%ROWTYPE;
    v_job      workhorse_job%ROWTYPE;
    v_state    text;
    v_prereqs  bigint[];
    v_live     bigint[] := '{}';
    v_ended    bigint[] := '{}';
    v_states   text[] := '{}';
    v_blocker  bigint;
    v_bstate   text;
    v_new      text := 'ready';
BEGIN
    SELECT * INTO v_job FROM workhorse_job j WHERE j.id = p_job_id;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'unknown'::text, NULL::text, NULL::bigint, NULL::text;
        RETURN;
    END IF;
    SELECT * INTO v_outcome FROM workhorse_job_outcome o
    WHERE o.job_id = p_job_id AND o.state IN ('failed', 'canceled')
    FOR UPDATE;
    IF NOT FOUND THEN
        SELECT coalesce(
            (SELECT rt.state FROM workhorse_job_runtime rt WHERE rt.job_id = p_job_id),
            (SELECT o.state FROM workhorse_job_outcome o WHERE o.job_id = p_job_id))
        INTO v_state;
        RETURN QUERY SELECT 'unchanged'::text, v_state, NULL::bigint, NULL::text;
        RETURN;
    END IF;

    IF v_job.dependency_policy IS NOT NULL AND NOT p_ignore_dependencies THEN
        v_prereqs := ARRAY(SELECT d.prerequisite_id FROM workhorse_job_dependency d
                           WHERE d.job_id = p_job_id ORDER BY d.prerequisite_id);
        -- Live ones first, then the ended ones (a statement of its own: its
        -- snapshot sees every end committed before the first lock was
        -- granted), then live again for any retried in between.
        v_live := ARRAY(SELECT rt.job_id FROM workhorse_job_runtime rt
                        WHERE rt.job_id = ANY (v_prereqs) ORDER BY rt.job_id FOR KEY SHARE);
        SELECT coalesce(array_agg(e.job_id ORDER BY e.job_id), '{}'),
               coalesce(array_agg(e.state ORDER BY e.job_id), '{}')
        INTO v_ended, v_states
        FROM (SELECT o.job_id, o.state FROM workhorse_job_outcome o
              WHERE o.job_id = ANY (v_prereqs) AND NOT o.job_id = ANY (v_live)
              ORDER BY o.job_id FOR KEY SHARE) e;
        v_live := v_live || ARRAY(
            SELECT rt.job_id FROM workhorse_job_runtime rt
            WHERE rt.job_id = ANY (v_prereqs) AND NOT rt.job_id = ANY (v_live)
              AND NOT rt.job_id = ANY (v_ended)
            ORDER BY rt.job_id FOR KEY SHARE);

        IF v_job.dependency_policy = 'any_succeeded' THEN
            IF NOT 'succeeded' = ANY (v_states) THEN
                IF cardinality(v_live) > 0 THEN
                    v_new := 'blocked';
                ELSIF cardinality(v_ended) > 0 THEN
                    -- Every prerequisite ended without a success: name the last.
                    v_blocker := v_ended[cardinality(v_ended)];
                    v_bstate := v_states[cardinality(v_states)];
                END IF;
            END IF;
        ELSE
            SELECT u.id, u.st INTO v_blocker, v_bstate
            FROM unnest(v_ended, v_states) AS u(id, st)
            WHERE v_job.dependency_policy = 'all_succeeded' AND u.st <> 'succeeded'
            ORDER BY u.id LIMIT 1;
            IF v_blocker IS NULL AND cardinality(v_live) > 0 THEN
                v_new := 'blocked';
            END IF;
        END IF;
        IF v_blocker IS NOT NULL THEN
            -- state is a domain over text; RETURN QUERY wants text exactly.
            RETURN QUERY SELECT 'unchanged'::text, v_outcome.state::text, v_blocker, v_bstate;
            RETURN;
        END IF;
    END IF;

    DELETE FROM workhorse_job_outcome o WHERE o.job_id = p_job_id;
    INSERT INTO workhorse_job_runtime
        (job_id, queue, priority, state, run_at, fence, pending_dependencies)
    VALUES (p_job_id, v_job.queue, v_job.priority, v_new, now(),
            nextval('workhorse_job_life_seq') * 4294967296,
            CASE WHEN v_new = 'blocked' THEN cardinality(v_live) ELSE 0 END);
    INSERT INTO workhorse_job_event (job_id, kind, attempt, data)
    VALUES (p_job_id, 'retried', 0,
            jsonb_strip_nulls(jsonb_build_object(
                'previous_state', v_outcome.state,
                'previous_attempts', v_outcome.attempts,
                'state', CASE WHEN v_new = 'blocked' THEN v_new END,
                'pending_dependencies', CASE WHEN v_new = 'blocked' THEN cardinality(v_live) END,
                'ignore_dependencies', CASE WHEN p_ignore_dependencies
                                                 AND v_job.dependency_policy IS NOT NULL
                                            THEN true END,
                'reason', p_reason)));
    UPDATE workhorse_job_runtime rt SET pending_dependencies = rt.pending_dependencies + 1
    WHERE rt.job_id = ANY (ARRAY(
        SELECT b.job_id FROM workhorse_job_runtime b
        WHERE b.job_id = ANY (ARRAY(SELECT d.job_id FROM workhorse_job_dependency d
                                    WHERE d.prerequisite_id = p_job_id))
          -- Not `b.state = 'blocked'`: that matches the partial index of
          -- blocked jobs, which a plan made on empty tables reads whole
          -- (docs/sql.md, "Plans that do not depend on statistics").
          AND (b.state = 'blocked') IS TRUE
        ORDER BY b.job_id
        FOR UPDATE));
    IF v_new = 'ready' THEN
        PERFORM pg_notify('workhorse:' || v_job.queue, '');
    END IF;
    RETURN QUERY SELECT 'changed'::text, v_new, NULL::bigint, NULL::text;
END;
$$;
