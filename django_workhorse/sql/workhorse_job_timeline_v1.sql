-- One job's history as a single stream, in time order across day
-- partitions: the closed attempts of attempt_history (at their finish), the
-- events of job_event, and the events that are not stored because another
-- row records them already:
--     'enqueued'  the job row: created_at, and the state and due time it
--                 started with (blocked when it has a dependency_policy,
--                 else scheduled when first_due_at is later than created_at,
--                 else ready);
--     'claimed'   every attempt's start: started_at of its attempt_history
--                 row, or of the runtime row while it runs (an attempt that
--                 closes without a history row, a release, stores it);
--     'succeeded' a run's success: its 'succeeded' attempt row.
-- Rows at the same instant go: the derived 'enqueued' (rank -1), attempts
-- (rank 0), stored events (rank 1, in write order), derived 'claimed'
-- (rank 2) and 'succeeded' (rank 3), which is the order the stored rows had
-- when every event was written (a claim's 'promoted' precedes it, a success
-- follows its claim and its attempt).
--
-- One instant can hold a whole run and more: everything a transaction does
-- has its start time, and run_jobs() inside a test's transaction enqueues,
-- claims, fails, claims again and succeeds a job in one. A claim is then
-- placed among the stored events it preceded: before the first one of its
-- attempt or a later one, not counting a release's 'claimed' and 'released'
-- (a run that came before) nor the event that closed an earlier run of the
-- same attempt number (a sleep gives its attempt back). For that, a stored
-- event's id in the (at, rank, id) key is 2 * its id + 1 and such a claim's
-- is 2 * that event's id, just before it; a claim that no stored event of
-- its instant follows keeps rank 2.
--
-- Paging is by keyset: pass the (at, rank, id) of the last row seen to get
-- the rows after it. Each source reads its (job_id, time, id) index with
-- its own LIMIT, so a page costs a few short index scans per day partition
-- however long its history is (the attempts' starts are sorted: there is
-- no index by start, and a job has few attempts). Nothing of a
-- job is recorded long before its creation, so the partitions of earlier
-- days are pruned at execution time and an old table with many partitions
-- costs no more than a new one. "Long": a row's time is its transaction's
-- start (now()), and a transaction that began before the job was enqueued
-- (by another session) can act on it, so the bound is a day before the
-- job's creation, not the creation itself; such a row reads first, at the
-- time it was stamped.
CREATE OR REPLACE FUNCTION workhorse_job_timeline_v1(
    p_job_id bigint,
    p_after_at timestamptz DEFAULT NULL,
    p_after_rank integer DEFAULT NULL,
    p_after_id bigint DEFAULT NULL,
    p_limit integer DEFAULT 100
) RETURNS TABLE (
    at timestamptz, rank integer, id bigint, source text, kind text, attempt integer,
    worker_id text, started_at timestamptz, finished_at timestamptz, error jsonb, data jsonb
)
LANGUAGE sql STABLE AS $$
    WITH job AS (
        SELECT j.id, j.created_at, j.created_at - interval '1 day' AS since,
               CASE WHEN j.dependency_policy IS NOT NULL THEN 'blocked'
                    WHEN j.first_due_at > j.created_at THEN 'scheduled'
                    ELSE 'ready' END AS state,
               coalesce(j.first_due_at, j.created_at) AS run_at
        FROM workhorse_job j WHERE j.id = p_job_id
    )
    SELECT * FROM (
        -- Attempts, and the successes they record, in finish order.
        (SELECT x.*
         FROM (SELECT h.* FROM workhorse_attempt_history h
               WHERE h.job_id = p_job_id
                 AND h.finished_at >= coalesce((SELECT since FROM job), '-infinity')
                 AND (p_after_at IS NULL
                      OR (h.finished_at >= p_after_at
                          AND (h.finished_at, CASE WHEN h.outcome = 'succeeded' THEN 3 ELSE 0 END,
                               h.id) > (p_after_at, p_after_rank, p_after_id)))
               ORDER BY h.finished_at, h.id
               LIMIT p_limit) h
         CROSS JOIN LATERAL (
             SELECT h.finished_at, 0, h.id, 'attempt', h.outcome, h.attempt, h.worker_id,
                    h.started_at, h.finished_at, h.error, NULL::jsonb
             UNION ALL
             SELECT h.finished_at, 3, h.id, 'event', 'succeeded', h.attempt, h.worker_id,
                    NULL, NULL, NULL, NULL
             WHERE h.outcome = 'succeeded'
         ) x(at, rank, id, source, kind, attempt, worker_id, started_at, finished_at, error, data)
         WHERE p_after_at IS NULL OR (x.at, x.rank, x.id) > (p_after_at, p_after_rank, p_after_id))
        UNION ALL
        -- The closed attempts' starts, in start order: a claim's time is its
        -- transaction's start, which can be earlier than the close of the
        -- attempt before it when the claim began first (its later statement
        -- saw the job come back), so finish order is not start order. A
        -- start is never after its own finish, which bounds the scan.
        (SELECT h.started_at, k.rank, k.id, 'event', 'claimed', h.attempt, h.worker_id,
                NULL::timestamptz, NULL::timestamptz, NULL::jsonb, NULL::jsonb
         FROM workhorse_attempt_history h
         CROSS JOIN LATERAL (
             SELECT CASE WHEN n.id IS NULL THEN 2 ELSE 1 END AS rank,
                    CASE WHEN n.id IS NULL THEN h.id ELSE 2 * n.id END AS id
             FROM (SELECT min(e.id) AS id FROM workhorse_job_event e
                   WHERE e.job_id = p_job_id AND e.at = h.started_at
                     AND e.attempt >= h.attempt AND e.kind NOT IN ('claimed', 'released')
                     AND NOT EXISTS (
                         SELECT 1 FROM workhorse_attempt_history p
                         WHERE p.job_id = p_job_id AND p.finished_at = e.at
                           AND p.attempt = e.attempt AND p.id < h.id)) n
         ) k
         WHERE h.job_id = p_job_id
           AND h.finished_at >= coalesce((SELECT since FROM job), '-infinity')
           AND (p_after_at IS NULL
                OR (h.finished_at >= p_after_at
                    AND (h.started_at, k.rank, k.id) > (p_after_at, p_after_rank, p_after_id)))
         ORDER BY h.started_at, k.rank, k.id
         LIMIT p_limit)
        UNION ALL
        (SELECT e.at, 1, 2 * e.id + 1, 'event', e.kind, e.attempt, e.worker_id,
                NULL::timestamptz, NULL::timestamptz, NULL::jsonb, e.data
         FROM workhorse_job_event e
         WHERE e.job_id = p_job_id
           AND e.at >= coalesce((SELECT since FROM job), '-infinity')
           AND (p_after_at IS NULL
                OR (e.at >= p_after_at
                    AND (e.at, 1, 2 * e.id + 1) > (p_after_at, p_after_rank, p_after_id)))
         ORDER BY e.at, e.id
         LIMIT p_limit)
        UNION ALL
        (SELECT rt.attempt_started_at, k.rank, k.id, 'event', 'claimed', rt.attempt, rt.worker_id,
                NULL::timestamptz, NULL::timestamptz, NULL::jsonb, NULL::jsonb
         FROM workhorse_job_runtime rt
         CROSS JOIN LATERAL (
             SELECT CASE WHEN n.id IS NULL THEN 2 ELSE 1 END AS rank,
                    CASE WHEN n.id IS NULL THEN 0::bigint ELSE 2 * n.id END AS id
             FROM (SELECT min(e.id) AS id FROM workhorse_job_event e
                   WHERE e.job_id = p_job_id AND e.at = rt.attempt_started_at
                     AND e.attempt >= rt.attempt AND e.kind NOT IN ('claimed', 'released')
                     AND NOT EXISTS (
                         SELECT 1 FROM workhorse_attempt_history p
                         WHERE p.job_id = p_job_id AND p.finished_at = e.at
                           AND p.attempt = e.attempt)) n
         ) k
         WHERE rt.job_id = p_job_id AND rt.state = 'active'
           AND (p_after_at IS NULL
                OR (rt.attempt_started_at, k.rank, k.id) > (p_after_at, p_after_rank, p_after_id)))
        UNION ALL
        (SELECT j.created_at, -1, 0::bigint, 'event', 'enqueued', 0, NULL::text,
                NULL::timestamptz, NULL::timestamptz, NULL::jsonb,
                jsonb_build_object('state', j.state, 'run_at', j.run_at)
         FROM job j
         WHERE p_after_at IS NULL
            OR (j.created_at, -1, 0::bigint) > (p_after_at, p_after_rank, p_after_id))
    ) t
    ORDER BY 1, 2, 3
    LIMIT p_limit
$$;
