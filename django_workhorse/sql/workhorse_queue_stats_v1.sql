-- The queue dashboard: one row per queue that has live jobs, finished jobs
-- in the last p_window, or a policy row.
--
-- Bounded work, whatever the size of the tables:
-- * Queues come from a skip scan of the query projection (one probe per
--   queue name, workhorse_queue_names_v1) plus the policy rows.
-- * Live counts are counted through the partial indexes of each state, per
--   queue, and stop at p_count_limit + 1 rows: a count above the limit comes
--   back as p_count_limit with the state listed in "capped" (the dashboard
--   shows "1,000+"). NULL counts exactly, at a cost that grows with the
--   queue's live jobs. Active jobs are bounded by the workers' slots and are
--   counted exactly.
-- * The oldest ready job is found per priority level present (a skip scan
--   of the ready index), not by reading every ready row.
-- * Terminal counts cover the recent window only, to the minute, and come
--   from the per-minute counters of workhorse_queue_minute, never from the
--   outcomes: the same few rows whether 10 or 1,000,000 jobs finished in
--   the window. finished_per_bucket splits the window into p_buckets equal
--   slices, oldest first (each minute falls in the slice its start is in).
-- JIT is off: compiling this statement costs more than running it.
CREATE OR REPLACE FUNCTION workhorse_queue_stats_v1(
    p_window interval DEFAULT interval '1 hour',
    p_buckets integer DEFAULT 12,
    p_count_limit integer DEFAULT NULL
) RETURNS TABLE (
    queue text, paused boolean,
    blocked bigint, scheduled bigint, ready bigint, active bigint,
    succeeded bigint, failed bigint, canceled bigint,
    oldest_ready_at timestamptz, oldest_ready_seconds double precision,
    finished_per_bucket bigint[], window_seconds double precision,
    capped text[],
    concurrency_limit integer, rate_limit integer, rate_period_seconds double precision
)
LANGUAGE plpgsql STABLE SET jit = off AS $$
DECLARE
    v_cap bigint := p_count_limit::bigint + 1;  -- NULL: LIMIT NULL counts everything
BEGIN
    IF NOT p_buckets BETWEEN 1 AND 1000 OR p_buckets IS NULL
       OR NOT p_window > interval '0' OR p_window IS NULL
       OR p_count_limit < 1 THEN
        RAISE EXCEPTION 'workhorse_queue_stats_v1: p_window must be more than 0, p_buckets from 1 to 1000 and p_count_limit at least 1 (or NULL); got %, %, %',
            p_window, p_buckets, p_count_limit USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    WITH names AS (
        SELECT n.queue FROM workhorse_queue_names_v1() n
    ),
    live AS (
        SELECT n.queue,
               (SELECT count(*) FROM (
                    SELECT 1 FROM workhorse_job_runtime rt
                    WHERE rt.queue = n.queue AND rt.state = 'blocked' LIMIT v_cap) s) AS blocked,
               (SELECT count(*) FROM (
                    SELECT 1 FROM workhorse_job_runtime rt
                    WHERE rt.queue = n.queue AND rt.state = 'scheduled' LIMIT v_cap) s) AS scheduled,
               (SELECT count(*) FROM (
                    SELECT 1 FROM workhorse_job_runtime rt
                    WHERE rt.queue = n.queue AND rt.state = 'ready' LIMIT v_cap) s) AS ready
        FROM names n
    ),
    levels AS (
        -- The priority levels that have ready jobs, highest first, one index
        -- probe each.
        WITH RECURSIVE p(queue, priority) AS (
            SELECT n.queue,
                   (SELECT rt.priority FROM workhorse_job_runtime rt
                    WHERE rt.queue = n.queue AND rt.state = 'ready'
                    ORDER BY rt.priority DESC LIMIT 1)
            FROM names n
            UNION ALL
            SELECT p.queue,
                   (SELECT rt.priority FROM workhorse_job_runtime rt
                    WHERE rt.queue = p.queue AND rt.state = 'ready' AND rt.priority < p.priority
                    ORDER BY rt.priority DESC LIMIT 1)
            FROM p WHERE p.priority IS NOT NULL
        )
        SELECT p.queue, p.priority FROM p WHERE p.priority IS NOT NULL
    ),
    oldest AS (
        SELECT l.queue,
               min((SELECT rt.run_at FROM workhorse_job_runtime rt
                    WHERE rt.queue = l.queue AND rt.state = 'ready' AND rt.priority = l.priority
                    ORDER BY rt.priority DESC, rt.run_at LIMIT 1)) AS oldest_ready
        FROM levels l
        GROUP BY l.queue
    ),
    running AS (
        -- Through the lease index: at most as many rows as workers have slots.
        SELECT a.queue, count(*) AS active
        FROM (SELECT rt.queue FROM workhorse_job_runtime rt
              WHERE rt.state = 'active' ORDER BY rt.lease_expires_at) a
        GROUP BY a.queue
    ),
    recent AS (
        -- The finish counters (queue_counts_v1.sql), kept per minute by the
        -- statement that ends the jobs: a range of the key's minute, at most
        -- (minutes in the window) x 16 shards rows per queue, whatever the
        -- throughput. A minute counts in full when any of it is in the
        -- window, so a finish is counted for up to a minute past it.
        SELECT m.queue, m.succeeded, m.failed, m.canceled,
               greatest(1, least(p_buckets, width_bucket(extract(epoch FROM m.minute),
                                             extract(epoch FROM now() - p_window),
                                             extract(epoch FROM now()), p_buckets))) AS bucket
        FROM workhorse_queue_minute m
        WHERE m.minute > now() - p_window - interval '1 minute'
    ),
    done AS (
        SELECT r.queue,
               sum(r.succeeded)::bigint AS succeeded,
               sum(r.failed)::bigint AS failed,
               sum(r.canceled)::bigint AS canceled
        FROM recent r
        GROUP BY r.queue
        HAVING sum(r.succeeded + r.failed + r.canceled) > 0
    ),
    per_bucket AS (
        SELECT r.queue, r.bucket, sum(r.succeeded + r.failed + r.canceled)::bigint AS n
        FROM recent r GROUP BY r.queue, r.bucket
    ),
    series AS (
        SELECT d.queue, array_agg(coalesce(pb.n, 0) ORDER BY g.b) AS finished
        FROM done d
        CROSS JOIN generate_series(1, p_buckets) AS g(b)
        LEFT JOIN per_bucket pb ON pb.queue = d.queue AND pb.bucket = g.b
        GROUP BY d.queue
    ),
    everything AS (
        SELECT l.queue FROM live l
        UNION SELECT wq.name FROM workhorse_queue wq
    )
    SELECT e.queue, coalesce(wq.paused, false),
           least(coalesce(l.blocked, 0), p_count_limit),
           least(coalesce(l.scheduled, 0), p_count_limit),
           least(coalesce(l.ready, 0), p_count_limit),
           coalesce(r.active, 0),
           coalesce(d.succeeded, 0), coalesce(d.failed, 0), coalesce(d.canceled, 0),
           o.oldest_ready,
           -- greatest() skips NULLs: keep "no ready job" NULL, not 0.
           CASE WHEN o.oldest_ready IS NOT NULL
                THEN greatest(0, extract(epoch FROM now() - o.oldest_ready))::double precision
           END,
           coalesce(s.finished, array_fill(0::bigint, ARRAY[p_buckets])),
           extract(epoch FROM p_window)::double precision,
           array_remove(ARRAY[
               CASE WHEN l.blocked > p_count_limit THEN 'blocked' END,
               CASE WHEN l.scheduled > p_count_limit THEN 'scheduled' END,
               CASE WHEN l.ready > p_count_limit THEN 'ready' END], NULL),
           wq.concurrency_limit, wq.rate_limit,
           extract(epoch FROM wq.rate_period)::double precision
    FROM everything e
    LEFT JOIN live l ON l.queue = e.queue
    LEFT JOIN oldest o ON o.queue = e.queue
    LEFT JOIN running r ON r.queue = e.queue
    LEFT JOIN done d ON d.queue = e.queue
    LEFT JOIN series s ON s.queue = e.queue
    LEFT JOIN workhorse_queue wq ON wq.name = e.queue
    WHERE wq.name IS NOT NULL OR d.queue IS NOT NULL OR r.queue IS NOT NULL
       OR l.blocked > 0 OR l.scheduled > 0 OR l.ready > 0
    ORDER BY e.queue;
END;
$$;
