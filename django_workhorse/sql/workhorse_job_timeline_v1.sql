-- One job's history as a single stream: the closed attempts of
-- attempt_history (at their finish) and the events of job_event, in time
-- order across day partitions. Rows at the same instant put the attempt
-- before the event it led to (rank 0, then 1), then go by id.
--
-- Paging is by keyset: pass the (at, rank, id) of the last row seen to get
-- the rows after it. Each side reads its (job_id, time, id) index with its
-- own LIMIT, so a page costs two short index scans per day partition
-- however long the history is; and nothing of a job is recorded long before
-- its creation, so the partitions of earlier days are pruned at execution
-- time and an old table with many partitions costs no more than a new one.
-- "Long": a row's time is its transaction's start (now()), and a
-- transaction that began before the job was enqueued (by another session)
-- can act on it, so the bound is a day before the job's creation, not the
-- creation itself; such a row reads first, at the time it was stamped.
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
    SELECT * FROM (
        (SELECT h.finished_at, 0, h.id, 'attempt', h.outcome, h.attempt, h.worker_id,
                h.started_at, h.finished_at, h.error, NULL::jsonb
         FROM workhorse_attempt_history h
         WHERE h.job_id = p_job_id
           AND h.finished_at >= coalesce(
               (SELECT j.created_at - interval '1 day' FROM workhorse_job j WHERE j.id = p_job_id),
               '-infinity')
           AND (p_after_at IS NULL
                OR (h.finished_at >= p_after_at
                    AND (h.finished_at, 0, h.id) > (p_after_at, p_after_rank, p_after_id)))
         ORDER BY h.finished_at, h.id
         LIMIT p_limit)
        UNION ALL
        (SELECT e.at, 1, e.id, 'event', e.kind, e.attempt, e.worker_id,
                NULL::timestamptz, NULL::timestamptz, NULL::jsonb, e.data
         FROM workhorse_job_event e
         WHERE e.job_id = p_job_id
           AND e.at >= coalesce(
               (SELECT j.created_at - interval '1 day' FROM workhorse_job j WHERE j.id = p_job_id),
               '-infinity')
           AND (p_after_at IS NULL
                OR (e.at >= p_after_at
                    AND (e.at, 1, e.id) > (p_after_at, p_after_rank, p_after_id)))
         ORDER BY e.at, e.id
         LIMIT p_limit)
    ) t
    ORDER BY 1, 2, 3
    LIMIT p_limit
$$;
