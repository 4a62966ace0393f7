-- Repeatable (cron) schedules: one row per schedule, synced from code and
-- settings when a worker starts, ticked by every worker's sweep.
--
-- next_run_at is the next slot the fleet owes; NULL means "not planned yet"
-- (a new schedule, a changed cron, a resumed one) and the next sweep sets it
-- to the first slot after now. A sweep takes a slot by moving next_run_at on
-- with a compare-and-set (workhorse_schedule_fire_v1), and the job it enqueues
-- carries the idempotency key 'schedule:<name>:<slot>', so the database holds
-- exactly one job per slot however many workers sweep.

CREATE TABLE workhorse_schedule (
    name          text PRIMARY KEY
        CONSTRAINT workhorse_schedule_name_format
        CHECK (name ~ '^[A-Za-z0-9_][A-Za-z0-9_.:-]*$' AND length(name) <= 200),
    job_name      text NOT NULL,
    cron          text NOT NULL,
    timezone      text NOT NULL DEFAULT 'UTC',
    payload       jsonb NOT NULL DEFAULT '{}'
        CONSTRAINT workhorse_schedule_payload_object CHECK (jsonb_typeof(payload) = 'object'),
    -- queue, max_attempts, priority, timeout, backoff, max_stalled of the jobs
    -- it enqueues, in the form workhorse_enqueue_many_v1 reads.
    job_options   jsonb NOT NULL DEFAULT '{}'
        CONSTRAINT workhorse_schedule_job_options_object
        CHECK (jsonb_typeof(job_options) = 'object'),
    catch_up      text NOT NULL DEFAULT 'latest'
        CONSTRAINT workhorse_schedule_catch_up CHECK (catch_up IN ('latest', 'all')),
    paused        boolean NOT NULL DEFAULT false,
    next_run_at   timestamptz,
    last_slot_at  timestamptz,
    last_job_id   bigint,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- The sweep's question: which running schedules are due (or not planned)?
CREATE INDEX workhorse_schedule_due ON workhorse_schedule (next_run_at) WHERE NOT paused;
