-- The queues that hold a live job (blocked, scheduled, ready or active), of
-- one of p_names when it is given, in name order: the queues that
-- django_workhorse.testing's run_jobs claims from, whatever queue a job was
-- enqueued on (options(queue=...), a Django task's using(queue_name=...)).
-- Reads the narrow runtime table; with p_names, each live job's name by its
-- primary key.
CREATE OR REPLACE FUNCTION workhorse_live_queues_v1(p_names text[] DEFAULT NULL)
RETURNS TABLE (queue text)
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT rt.queue FROM workhorse_job_runtime rt
    WHERE p_names IS NULL
       OR EXISTS (SELECT 1 FROM workhorse_job j WHERE j.id = rt.job_id AND j.name = ANY (p_names))
    ORDER BY 1
$$;
