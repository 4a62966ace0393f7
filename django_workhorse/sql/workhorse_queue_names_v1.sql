-- Every queue that has a job (live or kept in history) or a policy row, in
-- name order: the job list's queue filter. A skip scan of the query
-- projection's (queue, job_id) index: one index probe per distinct queue,
-- however many jobs each holds.
CREATE OR REPLACE FUNCTION workhorse_queue_names_v1()
RETURNS TABLE (queue text)
LANGUAGE sql STABLE AS $$
    WITH RECURSIVE names(n) AS (
        (SELECT q.queue FROM workhorse_job_query q ORDER BY q.queue LIMIT 1)
        UNION ALL
        SELECT (SELECT q.queue FROM workhorse_job_query q
                WHERE q.queue > names.n ORDER BY q.queue LIMIT 1)
        FROM names WHERE names.n IS NOT NULL
    )
    SELECT n FROM names WHERE n IS NOT NULL
    UNION
    SELECT wq.name FROM workhorse_queue wq
    ORDER BY 1
$$;
