-- One job's snapshot, whichever side of the runtime/outcome split it is on.
-- current_attempt is the attempt running or the last one that counted (0
-- before the first; a sleep or a stall gives its attempt back).
-- prerequisites: every job this one depends on, and dependents: the first
-- 100 jobs that depend on it, each as {"id", "name", "state"} in id order
-- (state is null for a job retention has deleted); both are [] for a job
-- without dependencies, read with one probe of an empty index range each.
CREATE OR REPLACE FUNCTION workhorse_get_job_v1(p_job_id bigint)
RETURNS TABLE (
    job_id bigint, name text, queue text, payload jsonb, state text, priority smallint,
    current_attempt integer, max_attempts integer, stall_count integer, run_at timestamptz,
    worker_id text, lease_expires_at timestamptz, cancel_requested boolean,
    result jsonb, error jsonb, idempotency_key text,
    created_at timestamptz, started_at timestamptz, finished_at timestamptz,
    dependency_policy text, pending_dependencies integer, prerequisites jsonb, dependents jsonb
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
           j.idempotency_key, j.created_at, rt.attempt_started_at, o.finished_at,
           j.dependency_policy, coalesce(rt.pending_dependencies, 0),
           (SELECT coalesce(jsonb_agg(jsonb_build_object(
                       'id', d.prerequisite_id, 'name', pj.name,
                       'state', coalesce(prt.state, po.state)) ORDER BY d.prerequisite_id), '[]')
            FROM workhorse_job_dependency d
            LEFT JOIN workhorse_job pj ON pj.id = d.prerequisite_id
            LEFT JOIN workhorse_job_runtime prt ON prt.job_id = d.prerequisite_id
            LEFT JOIN workhorse_job_outcome po ON po.job_id = d.prerequisite_id
            WHERE d.job_id = j.id),
           (SELECT coalesce(jsonb_agg(jsonb_build_object(
                       'id', x.job_id, 'name', dj.name,
                       'state', coalesce(drt.state, dout.state)) ORDER BY x.job_id), '[]')
            FROM (SELECT d.job_id FROM workhorse_job_dependency d
                  WHERE d.prerequisite_id = j.id ORDER BY d.job_id LIMIT 100) x
            LEFT JOIN workhorse_job dj ON dj.id = x.job_id
            LEFT JOIN workhorse_job_runtime drt ON drt.job_id = x.job_id
            LEFT JOIN workhorse_job_outcome dout ON dout.job_id = x.job_id)
    FROM workhorse_job j
    LEFT JOIN workhorse_job_runtime rt ON rt.job_id = j.id
    LEFT JOIN workhorse_job_outcome o ON o.job_id = j.id
    WHERE j.id = p_job_id
$$;
