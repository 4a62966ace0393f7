-- The queue dashboard: one row per queue that has live jobs, finished jobs
-- in the last p_window, or a policy row. Live counts come from the runtime
-- table (small: it holds live jobs only); terminal counts cover the recent
-- window only, found through the BRIN index on finished_at, never a count
-- of all history. finished_per_bucket splits the window into p_buckets
-- equal slices, oldest first, for the throughput chart.
CREATE OR REPLACE FUNCTION workhorse_queue_stats_v1(
    p_window interval DEFAULT interval '1 hour',
    p_buckets integer DEFAULT 12
) RETURNS TABLE (
    queue text, paused boolean,
    blocked bigint, scheduled bigint, ready bigint, active bigint,
    succeeded bigint, failed bigint, canceled bigint,
    oldest_ready_at timestamptz, oldest_ready_seconds double precision,
    finished_per_bucket bigint[], window_seconds double precision
)
LANGUAGE sql STABLE AS $$
    WITH live AS (
        SELECT rt.queue,
               count(*) FILTER (WHERE rt.state = 'blocked') AS blocked,
               count(*) FILTER (WHERE rt.state = 'scheduled') AS scheduled,
               count(*) FILTER (WHERE rt.state = 'ready') AS ready,
               count(*) FILTER (WHERE rt.state = 'active') AS active,
               min(rt.run_at) FILTER (WHERE rt.state = 'ready') AS oldest_ready
        FROM workhorse_job_runtime rt
        GROUP BY rt.queue
    ),
    recent AS (
        SELECT q.queue, o.state,
               least(p_buckets, width_bucket(extract(epoch FROM o.finished_at),
                                             extract(epoch FROM now() - p_window),
                                             extract(epoch FROM now()), p_buckets)) AS bucket
        FROM workhorse_job_outcome o
        -- A primary-key probe per recent outcome: as a plain join the planner
        -- hashed a sequential scan of the whole query projection (all of
        -- history) to find the queues of a few hundred recent jobs.
        CROSS JOIN LATERAL (
            SELECT q.queue FROM workhorse_job_query q WHERE q.job_id = o.job_id OFFSET 0
        ) q
        WHERE o.finished_at > now() - p_window
    ),
    done AS (
        SELECT r.queue,
               count(*) FILTER (WHERE r.state = 'succeeded') AS succeeded,
               count(*) FILTER (WHERE r.state = 'failed') AS failed,
               count(*) FILTER (WHERE r.state = 'canceled') AS canceled
        FROM recent r
        GROUP BY r.queue
    ),
    per_bucket AS (
        SELECT r.queue, r.bucket, count(*) AS n FROM recent r GROUP BY r.queue, r.bucket
    ),
    series AS (
        SELECT d.queue, array_agg(coalesce(pb.n, 0) ORDER BY g.b) AS finished
        FROM done d
        CROSS JOIN generate_series(1, p_buckets) AS g(b)
        LEFT JOIN per_bucket pb ON pb.queue = d.queue AND pb.bucket = g.b
        GROUP BY d.queue
    ),
    names AS (
        SELECT l.queue FROM live l
        UNION SELECT d.queue FROM done d
        UNION SELECT wq.name FROM workhorse_queue wq
    )
    SELECT n.queue, coalesce(wq.paused, false),
           coalesce(l.blocked, 0), coalesce(l.scheduled, 0), coalesce(l.ready, 0),
           coalesce(l.active, 0),
           coalesce(d.succeeded, 0), coalesce(d.failed, 0), coalesce(d.canceled, 0),
           l.oldest_ready,
           -- greatest() skips NULLs: keep "no ready job" NULL, not 0.
           CASE WHEN l.oldest_ready IS NOT NULL
                THEN greatest(0, extract(epoch FROM now() - l.oldest_ready))::double precision
           END,
           coalesce(s.finished, array_fill(0::bigint, ARRAY[p_buckets])),
           extract(epoch FROM p_window)::double precision
    FROM names n
    LEFT JOIN live l ON l.queue = n.queue
    LEFT JOIN done d ON d.queue = n.queue
    LEFT JOIN series s ON s.queue = n.queue
    LEFT JOIN workhorse_queue wq ON wq.name = n.queue
    ORDER BY n.queue
$$;
