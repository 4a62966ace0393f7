-- The workers seen within p_seen_within, most recently seen first.
CREATE OR REPLACE FUNCTION workhorse_list_workers_v1(
    p_seen_within interval DEFAULT interval '1 hour'
) RETURNS TABLE (
    worker_id text, info jsonb, first_seen_at timestamptz, last_seen_at timestamptz,
    seen_seconds_ago double precision
)
LANGUAGE sql STABLE AS $$
    SELECT w.worker_id, w.info, w.first_seen_at, w.last_seen_at,
           greatest(0, extract(epoch FROM now() - w.last_seen_at))::double precision
    FROM workhorse_worker w
    WHERE w.last_seen_at > now() - p_seen_within
    ORDER BY w.last_seen_at DESC, w.worker_id
    LIMIT 1000;
$$;
