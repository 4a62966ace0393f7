-- One job's snapshot, whichever side of the runtime/outcome split it is on.
-- current_attempt is the attempt running or last run (0 before the first).
CREATE OR REPLACE FUNCTION workhorse_get_job_v1(p_job_id bigint)
RETURNS TABLE (
    job_id bigint, name text, queue text, payload jsonb, state text, priority smallint,
    current_attempt integer, max_attempts integer, stall_count integer, run_at timestamptz,
    worker_id text, lease_expires_at timestamptz, cancel_requested boolean,
    result jsonb, error jsonb, idempotency_key text,
    created_at timestamptz, started_at timestamptz, finished_at timestamptz
)
LANGUAGE sql STABLE AS $$
    SELECT j.id, j.name, j.queue, j.payload, coalesce(rt.state, o.state), j.priority,
           coalesce(rt.attempt, o.attempts), j.max_attempts,
           coalesce(rt.stall_count, o.stall_count), rt.run_at,
           rt.worker_id, rt.lease_expires_at, coalesce(rt.cancel_requested, false),
           o.result,
           coalesce(o.error, (SELECT h.error FROM workhorse_attempt_history h
                              WHERE h.job_id = j.id AND h.error IS NOT NULL
                              ORDER BY h.finished_at DESC, h.id DESC LIMIT 1)),
           j.idempotency_key, j.created_at, rt.attempt_started_at, o.finished_at
    FROM workhorse_job j
    LEFT JOIN workhorse_job_runtime rt ON rt.job_id = j.id
    LEFT JOIN workhorse_job_outcome o ON o.job_id = j.id
    WHERE j.id = p_job_id
$$;
