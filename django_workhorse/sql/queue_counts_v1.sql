-- Counters of finished jobs, kept by the statement that ends them
-- (workhorse_end_runs_v1), so that the queue dashboard reads a few rows per
-- queue and minute instead of every outcome of its window.
--
-- Reading the outcomes of the last hour (and probing the query projection
-- once per outcome for its queue) cost time in proportion to the hour's
-- traffic: 40 ms with nothing finished, 1.6 s with 600,000 jobs, and the
-- queues page passed 100 ms at about 8 jobs/s sustained. These counters
-- cost the same at 10 jobs/s and at 10,000: at most 60 minutes x shards rows
-- per queue for an hour (docs/admin.md, "Queue statistics").
--
-- One row per (minute, queue, shard), upserted once per finishing call and
-- queue, never once per job. The shard is the writing backend's pid modulo
-- 16: the upsert locks its row until the finishing transaction commits, and
-- two workers that shared one row per queue and minute would commit their
-- batches one after the other. With the shard, a fleet of up to about 16
-- writing connections rarely meets on one row. Rows are only ever updated in
-- place on non-key columns (HOT updates on a page kept half empty), and
-- workhorse_prune_v1 deletes them with the history (p_history_before).
CREATE TABLE workhorse_queue_minute (
    minute    timestamptz NOT NULL,
    queue     text NOT NULL,
    shard     smallint NOT NULL,
    succeeded bigint NOT NULL DEFAULT 0,
    failed    bigint NOT NULL DEFAULT 0,
    canceled  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, queue, shard)
) WITH (fillfactor = 50);

-- Jobs that ended failed, by hour, job name and error type, for the
-- admin's failures view ("which jobs fail, and why, in the last 24 hours"),
-- which would otherwise read every failed outcome of the day and probe each
-- job's name. Written only for failures (the job's name is read from its
-- identity row, one probe per failed job: a success pays nothing), with the
-- newest failed job kept as a sample for the view's link. Sharded and pruned
-- as workhorse_queue_minute is.
CREATE TABLE workhorse_failure_hour (
    hour        timestamptz NOT NULL,
    name        text NOT NULL,
    error_type  text NOT NULL,
    shard       smallint NOT NULL,
    failures    bigint NOT NULL DEFAULT 0,
    last_job_id bigint NOT NULL,
    last_at     timestamptz NOT NULL,
    PRIMARY KEY (hour, name, error_type, shard)
) WITH (fillfactor = 70);
