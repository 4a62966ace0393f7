-- Every closed attempt of one job, oldest first, with the worker that ran it
-- and the error it ended with. A stall closes a run without using an attempt,
-- so one attempt number can appear more than once (the stalled run, then the
-- run that finished it). The running attempt is not here: it is on the
-- runtime row (workhorse_get_job_v1's worker_id and started_at).
CREATE OR REPLACE FUNCTION workhorse_get_attempts_v1(p_job_id bigint)
RETURNS TABLE (
    attempt integer, outcome text, worker_id text,
    started_at timestamptz, finished_at timestamptz, error jsonb
)
LANGUAGE sql STABLE AS $$
    SELECT h.attempt, h.outcome, h.worker_id, h.started_at, h.finished_at, h.error
    FROM workhorse_attempt_history h
    WHERE h.job_id = p_job_id
    ORDER BY h.finished_at, h.id
$$;
