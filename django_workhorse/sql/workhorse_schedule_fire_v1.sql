-- Takes the due slots of one schedule and enqueues a job for each.
--
-- p_expected is the next_run_at the caller read; the UPDATE only matches while
-- it is still there, so of many workers sweeping at once exactly one moves the
-- schedule on to p_next and enqueues p_slots; the others get no rows. Each job
-- carries the idempotency key 'schedule:<name>:<slot in UTC>' and runs at its
-- slot, so even a slot offered twice (a reset plan, an operator's SQL) makes
-- one job. An empty p_slots only plans the next slot.
-- Returns one row per slot: the job id and whether this call inserted it.
CREATE OR REPLACE FUNCTION workhorse_schedule_fire_v1(
    p_name text,
    p_expected timestamptz,
    p_slots timestamptz[],
    p_next timestamptz
) RETURNS TABLE (slot_at timestamptz, job_id bigint, inserted boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_schedule workhorse_schedule;
    v_jobs     jsonb;
    v_ids      bigint[];
    v_inserted boolean[];
BEGIN
    UPDATE workhorse_schedule s
    SET next_run_at = p_next,
        last_slot_at = coalesce(p_slots[cardinality(p_slots)], s.last_slot_at),
        updated_at = now()
    WHERE s.name = p_name AND NOT s.paused
      AND s.next_run_at IS NOT DISTINCT FROM p_expected
    RETURNING s.* INTO v_schedule;
    IF NOT FOUND OR coalesce(cardinality(p_slots), 0) = 0 THEN
        RETURN;
    END IF;

    SELECT jsonb_agg(
               v_schedule.job_options || jsonb_build_object(
                   'name', v_schedule.job_name,
                   'payload', v_schedule.payload,
                   'run_at', t.at,
                   'idempotency_key', 'schedule:' || v_schedule.name || ':'
                       || to_char(t.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
               ORDER BY t.i)
    INTO v_jobs
    FROM unnest(p_slots) WITH ORDINALITY AS t(at, i);

    SELECT array_agg(e.job_id ORDER BY e.i), array_agg(e.inserted ORDER BY e.i)
    INTO v_ids, v_inserted
    FROM workhorse_enqueue_many_v1(v_jobs) WITH ORDINALITY AS e(job_id, inserted, i);

    UPDATE workhorse_schedule s SET last_job_id = v_ids[cardinality(v_ids)]
    WHERE s.name = p_name;

    RETURN QUERY
    SELECT p_slots[i], v_ids[i], v_inserted[i] FROM generate_subscripts(p_slots, 1) AS i;
END;
$$;
