-- One step of a filter-wide action, called by its workhorse.operator job
-- until the returned status is 'finished' or 'canceled'.
--
-- The action's row is held FOR UPDATE for the step, so two runs of the
-- action's job (a run whose lease expired and the run that recovered it)
-- take their steps one after the other, each going on from where the last
-- committed one left the row: no job is acted on twice.
--
-- The first step starts the action: status 'running', who runs it
-- (p_job_id), and total, the jobs matching now (workhorse_count_jobs_v1).
-- Every later step acts on one batch: the next batch_size jobs of
-- states[phase] below position (newest first, as the job list pages them
-- through workhorse_list_jobs_v1; at first below bound_id + 1), each
-- through workhorse_retry_v1 or workhorse_cancel_v1, and counts them:
-- changed, requested (a running job's worker was asked to cancel it) or
-- skipped (its state no longer allowed the action: 'unchanged' or gone).
-- A state with no job left moves on to the next; after the last, the
-- action is 'finished', and total becomes the number it walked. A step
-- that finds the action's cancel requested ends it 'canceled' instead.
-- Jobs of the queue workhorse.operator (the actions' own jobs) are passed
-- over and not counted.
CREATE OR REPLACE FUNCTION workhorse_bulk_step_v1(p_action_id bigint, p_job_id bigint DEFAULT NULL)
RETURNS SETOF workhorse_bulk_action
LANGUAGE plpgsql AS $$
DECLARE
    a        workhorse_bulk_action%ROWTYPE;
    v_ids    bigint[];
    v_queues text[];
    v_i      integer;
    v_id     bigint;
    v_status text;
    v_total  bigint := 0;
    v_state  text;
BEGIN
    SELECT * INTO a FROM workhorse_bulk_action WHERE id = p_action_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF a.status IN ('finished', 'canceled') THEN
        RETURN NEXT a;
        RETURN;
    END IF;
    IF a.cancel_requested_at IS NOT NULL THEN
        RETURN QUERY UPDATE workhorse_bulk_action b
           SET status = 'canceled', finished_at = clock_timestamp()
         WHERE b.id = p_action_id RETURNING b.*;
        RETURN;
    END IF;
    IF a.status = 'queued' THEN
        FOREACH v_state IN ARRAY a.states LOOP
            v_total := v_total + workhorse_count_jobs_v1(
                a.queue, a.name, v_state, a.created_after, a.created_before, 2147483647);
        END LOOP;
        RETURN QUERY UPDATE workhorse_bulk_action b
           SET status = 'running', started_at = clock_timestamp(),
               progressed_at = clock_timestamp(), job_id = p_job_id, total = v_total
         WHERE b.id = p_action_id RETURNING b.*;
        RETURN;
    END IF;
    WHILE a.phase <= cardinality(a.states) LOOP
        SELECT coalesce(array_agg(l.job_id ORDER BY l.job_id DESC), '{}'),
               coalesce(array_agg(l.queue ORDER BY l.job_id DESC), '{}')
          INTO v_ids, v_queues
          FROM workhorse_list_jobs_v1(
                p_queue => a.queue, p_name => a.name, p_state => a.states[a.phase],
                p_created_after => a.created_after, p_created_before => a.created_before,
                p_before_id => coalesce(a.position, a.bound_id + 1), p_limit => a.batch_size) l;
        IF cardinality(v_ids) = 0 THEN
            a.phase := a.phase + 1;
            a.position := NULL;
            CONTINUE;
        END IF;
        FOR v_i IN 1 .. cardinality(v_ids) LOOP
            -- The jobs that run actions are not an action's to touch (a
            -- "cancel all" of every queue would cancel itself).
            CONTINUE WHEN v_queues[v_i] = 'workhorse.operator';
            v_id := v_ids[v_i];
            IF a.action = 'retry' THEN
                SELECT r.status INTO v_status FROM workhorse_retry_v1(v_id, a.reason, false) r;
            ELSE
                SELECT c.status INTO v_status
                  FROM workhorse_cancel_v1(v_id, a.reason, a.requested_by) c;
            END IF;
            a.matched := a.matched + 1;
            IF v_status = 'changed' THEN
                a.changed := a.changed + 1;
            ELSIF v_status = 'requested' THEN
                a.requested := a.requested + 1;
            ELSE
                a.skipped := a.skipped + 1;
            END IF;
        END LOOP;
        a.position := v_ids[cardinality(v_ids)];
        a.batches := a.batches + 1;
        EXIT;
    END LOOP;
    RETURN QUERY UPDATE workhorse_bulk_action b
       SET phase = a.phase, position = a.position, matched = a.matched, changed = a.changed,
           requested = a.requested, skipped = a.skipped, batches = a.batches,
           progressed_at = clock_timestamp(),
           status = CASE WHEN a.phase > cardinality(a.states) THEN 'finished' ELSE b.status END,
           finished_at = CASE WHEN a.phase > cardinality(a.states) THEN clock_timestamp() END,
           total = CASE WHEN a.phase > cardinality(a.states) THEN a.matched ELSE b.total END
     WHERE b.id = p_action_id RETURNING b.*;
END;
$$;
