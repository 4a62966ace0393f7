-- Takes the due slots of one schedule and enqueues a job for each.
--
-- p_expected is the next_run_at the caller read; the UPDATE only matches while
-- it is still there, so of many workers sweeping at once exactly one moves the
-- schedule on to p_next and enqueues p_slots; the others get no rows. Each job
-- carries the idempotency key 'schedule:<name>:<slot in UTC>' and runs at its
-- slot, so even a slot offered twice (a reset plan, an operator's SQL) makes
-- one job. An empty p_slots only plans the next slot.
-- Returns one row per slot: the job id and whether this call inserted it.
--
-- p_next and every slot must lie in the years 1 to 9999 (UTC), the range of
-- a job's run_at and what Python can load ('-infinity' and 'infinity' are
-- outside it): a schedule whose next_run_at Python cannot read could not be
-- swept, listed or shown. Refused with 22023 before anything changes. A NULL
-- p_next leaves the schedule unplanned (the next sweep plans it).
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
    IF NOT (p_next >= '0001-01-01 00:00:00+00' AND p_next < '10000-01-01 00:00:00+00') THEN
        RAISE EXCEPTION 'workhorse_schedule_fire_v1: next % of schedule % is outside the years '
            '1 to 9999 (UTC)', p_next, to_jsonb(p_name)::text
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'next is a time from 0001-01-01 to 9999-12-31 23:59:59.999999 UTC '
                         '(now() makes the schedule due at once), or NULL to have the next '
                         'sweep plan the first slot after now';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(p_slots) AS t(at)
               WHERE t.at IS NULL
                  OR NOT (t.at >= '0001-01-01 00:00:00+00' AND t.at < '10000-01-01 00:00:00+00'))
    THEN
        RAISE EXCEPTION 'workhorse_schedule_fire_v1: the slots % of schedule % are not all times '
            'in the years 1 to 9999 (UTC)', left(p_slots::text, 200), to_jsonb(p_name)::text
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'each slot is the run_at of the job it enqueues: a time from '
                         '0001-01-01 to 9999-12-31 23:59:59.999999 UTC';
    END IF;

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
