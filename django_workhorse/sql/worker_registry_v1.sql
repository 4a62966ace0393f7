-- The live workers, as their heartbeats describe them, for the admin's
-- workers view and workhorse_status: one row per worker process (its
-- worker id), written by the heartbeat's own call
-- (workhorse_heartbeat_many_v1 with p_worker_info), so it costs no extra
-- round trip: a worker with running jobs makes that call anyway, and an
-- idle one makes it with no jobs once per renew interval. info is what the
-- worker says of itself (host, pid, queues and their slots, slots busy,
-- version, renew interval in seconds); last_seen_at is the database's time
-- of its latest heartbeat. A worker that stops gracefully deletes its row;
-- one that died stays until workhorse_prune_v1 retires it with the history
-- (the view tells the two apart by last_seen_at).
CREATE TABLE workhorse_worker (
    worker_id     text PRIMARY KEY,
    info          jsonb NOT NULL,
    first_seen_at timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 50);
