-- Brings scheduled jobs of p_queues forward: a run_at later than now (a
-- delay, run_at, or a retry's backoff) becomes now, so the next claim hands
-- them out. Used by django_workhorse.testing to skip waits in a test; each
-- moved job gets a 'made_due' event with the run_at it had. Returns how many
-- jobs moved.
--
-- The rate window of each of p_queues that has a rate limit starts afresh
-- too: its record of recent claims is emptied, or a rate-limited queue would
-- hand out only its rate's worth of jobs and then wait for the window to
-- pass (inside a test's transaction now() never moves, so it never passes).
CREATE OR REPLACE FUNCTION workhorse_make_due_v1(p_queues text[])
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_count integer;
BEGIN
    WITH moved AS (
        UPDATE workhorse_job_runtime rt
        SET run_at = now()
        FROM workhorse_job_runtime old
        WHERE old.job_id = rt.job_id
          AND rt.state = 'scheduled' AND rt.queue = ANY (p_queues) AND rt.run_at > now()
        RETURNING rt.job_id, rt.attempt, old.run_at AS was
    ), logged AS (
        INSERT INTO workhorse_job_event (job_id, kind, attempt, data)
        SELECT m.job_id, 'made_due', m.attempt, jsonb_build_object('run_at', m.was) FROM moved m
    )
    SELECT count(*) INTO v_count FROM moved;

    UPDATE workhorse_queue wq
    SET rate_starts = '{}', rate_counts = '{}'
    WHERE wq.name = ANY (p_queues) AND cardinality(wq.rate_starts) > 0;
    RETURN v_count;
END
$$;
