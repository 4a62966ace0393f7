-- The active jobs by queue, then lease expiry: one index where there was the
-- lease index (lease expiry alone). A claim of a queue with a concurrency
-- limit counts that queue's active jobs (workhorse_claim_many_v1, and
-- workhorse_next_run_at_v1 for an idle worker); on the lease index each
-- count read every active job of every queue and kept the limited queue's:
-- 0.29 ms a claim with 480 jobs running, and with 24 worker processes of 20
-- slots the server spent twice the CPU per job on a drain with a limited
-- queue among the served ones as without it (make bench BENCH_ARGS=fleet).
-- Stall recovery, which looked expired leases up in the lease index, now
-- reads the active jobs of every queue in this one and sorts them by expiry:
-- bounded by the fleet's slots, and done by one worker every
-- STALLED_INTERVAL. No index is added to what a claim or a finish writes.
CREATE INDEX workhorse_runtime_active
    ON workhorse_job_runtime (queue, lease_expires_at) WHERE state = 'active';
DROP INDEX workhorse_runtime_lease;
