-- The workers seen within p_seen_within, most recently seen first, as
-- workhorse_list_workers_v1 lists them, for any row the table can hold.
--
-- A first_seen_at or last_seen_at outside the years 1 to 9999 (UTC), which
-- Python cannot load (only a hand-written row holds one: 'infinity', the
-- year 10000), is returned as NULL, and 'unreadable' says which it was and
-- the fix, so that one such row neither hides the others nor fails the
-- workers page, the queues page or workhorse_status. seen_seconds_ago is
-- then NULL too: v1 failed the whole call on an infinite last_seen_at
-- ("cannot subtract infinite timestamps"). info is returned as stored; its
-- reader judges each field (a heartbeat writes it whole again).
CREATE OR REPLACE FUNCTION workhorse_list_workers_v2(
    p_seen_within interval DEFAULT interval '1 hour'
) RETURNS TABLE (
    worker_id text, info jsonb, first_seen_at timestamptz, last_seen_at timestamptz,
    seen_seconds_ago double precision, unreadable text
)
LANGUAGE sql STABLE AS $$
    SELECT w.worker_id, w.info,
           CASE WHEN r.first_ok THEN w.first_seen_at END,
           CASE WHEN r.last_ok THEN w.last_seen_at END,
           CASE WHEN r.last_ok
                THEN greatest(0, extract(epoch FROM now() - w.last_seen_at))::double precision
           END,
           CASE WHEN NOT (r.first_ok AND r.last_ok) THEN concat_ws('; ',
               CASE WHEN NOT r.first_ok THEN 'first_seen_at ' || w.first_seen_at::text
                   || ' is outside the years 1 to 9999 (UTC) that Python reads' END,
               CASE WHEN NOT r.last_ok THEN 'last_seen_at ' || w.last_seen_at::text
                   || ' is outside the years 1 to 9999 (UTC) that Python reads' END)
               || '; delete the row (DELETE FROM workhorse_worker WHERE worker_id = '
               || quote_literal(w.worker_id) || '): a running worker writes its row again'
               || ' at its next heartbeat' END
    FROM workhorse_worker w
    CROSS JOIN LATERAL (
        SELECT w.first_seen_at >= '0001-01-01 00:00:00+00'
               AND w.first_seen_at < '10000-01-01 00:00:00+00' AS first_ok,
               w.last_seen_at >= '0001-01-01 00:00:00+00'
               AND w.last_seen_at < '10000-01-01 00:00:00+00' AS last_ok
    ) r
    WHERE w.last_seen_at > now() - p_seen_within
    ORDER BY w.last_seen_at DESC, w.worker_id
    LIMIT 1000;
$$;
