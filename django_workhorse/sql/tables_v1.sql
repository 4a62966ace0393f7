-- The relations of django-workhorse, schema version 1.
--
-- A job is three rows: immutable identity (workhorse_job), the live row
-- (workhorse_job_runtime) while it is blocked, scheduled, ready or active, and
-- the terminal row (workhorse_job_outcome) once it succeeded, failed or was
-- canceled. The SQL functions move a job from runtime to outcome in one
-- transaction, so a committed job has exactly one of the two.
--
-- The runtime, outcome and query rows carry the job's id without a foreign
-- key. Only the SQL functions write them: enqueue creates job, runtime and
-- query rows in one statement, and an outcome row is only ever made from a
-- runtime row. A foreign-key check locks the job row (FOR KEY SHARE), which
-- writes WAL and dirties a page of the ever-growing job table on every
-- finish; without the three keys a two-process drain went from ~21,600 to
-- ~25,000 jobs/s and enqueue_many from ~28,500 to ~35,000 jobs/s.

-- Rules on one column are domains, not table CHECKs, on the tables every
-- job writes. PostgreSQL prepares a table's CHECK expressions again for each
-- statement that inserts or updates a row (the executor's state holds them),
-- while a domain's rule is prepared once per session (the type cache) and
-- only evaluated per row. A one-job enqueue wrote two tables with fifteen
-- CHECKs between them: they were about 40% of its server time
-- (docs/decisions.md, "Column rules as domains"). The constraint names are
-- those the CHECKs had, so an error still names the rule that was broken.
-- Rules over several columns stay table CHECKs.
CREATE DOMAIN workhorse_job_name AS text
    -- A bounded repeat ({0,199}) costs the regex engine ~3 us a row, a
    -- quarter of the whole insert; '*' and a length test cost 0.1 us.
    CONSTRAINT workhorse_job_name_format
    CHECK (VALUE ~ '^[A-Za-z_][A-Za-z0-9_.:-]*$' AND length(VALUE) <= 200);
-- Queue names become NOTIFY channels ('workhorse:' || queue), which are
-- identifiers of at most 63 bytes: hence 53 characters.
CREATE DOMAIN workhorse_queue_name AS text
    CONSTRAINT workhorse_job_queue_format
    CHECK (VALUE ~ '^[A-Za-z0-9_][A-Za-z0-9_.-]*$' AND length(VALUE) <= 53);
CREATE DOMAIN workhorse_payload AS jsonb
    CONSTRAINT workhorse_job_payload_object CHECK (jsonb_typeof(VALUE) = 'object');
CREATE DOMAIN workhorse_max_attempts AS integer
    CONSTRAINT workhorse_job_max_attempts_range CHECK (VALUE BETWEEN 1 AND 1000);
CREATE DOMAIN workhorse_priority AS smallint
    CONSTRAINT workhorse_job_priority_range CHECK (VALUE BETWEEN -100 AND 100);
CREATE DOMAIN workhorse_timeout AS interval
    CONSTRAINT workhorse_job_timeout_positive CHECK (VALUE > interval '0');
-- A retry policy as backoff.py writes it (NULL: the default one): a kind
-- workhorse_backoff_delay_v1 knows, and durations and a jitter it can
-- compute with, in the ranges of limits.py; a key left out takes the
-- default's value. Held at the write: a policy the delay could not read
-- would fail every fail_many call that named its job.
CREATE DOMAIN workhorse_backoff AS jsonb
    CONSTRAINT workhorse_job_backoff_policy
    CHECK (jsonb_typeof(VALUE) = 'object'
           AND coalesce(VALUE ->> 'kind', 'exponential') IN ('exponential', 'fixed')
           AND NOT VALUE @? '$ ? (@.kind.type() != "string"
                                  || @.base.type() != "number" || @.base < 0 || @.base > 3155760000
                                  || @.max.type() != "number" || @.max < 0 || @.max > 3155760000
                                  || @.delay.type() != "number" || @.delay < 0 || @.delay > 3155760000
                                  || @.jitter.type() != "number" || @.jitter < 0 || @.jitter > 1)');
CREATE DOMAIN workhorse_max_stalled AS integer
    CONSTRAINT workhorse_job_max_stalled_range CHECK (VALUE BETWEEN 0 AND 1000);
CREATE DOMAIN workhorse_idempotency_key AS text
    CONSTRAINT workhorse_job_idempotency_key_length CHECK (length(VALUE) BETWEEN 1 AND 255);
CREATE DOMAIN workhorse_dependency_policy AS text
    CONSTRAINT workhorse_job_dependency_policy
    CHECK (VALUE IN ('all_succeeded', 'all_finished', 'any_succeeded'));
CREATE DOMAIN workhorse_live_state AS text
    CONSTRAINT workhorse_runtime_state CHECK (VALUE IN ('blocked', 'scheduled', 'ready', 'active'));
-- Years 1 to 9999 in UTC: what Python can read back (limits.py).
CREATE DOMAIN workhorse_run_at AS timestamptz
    CONSTRAINT workhorse_runtime_run_at_range
    CHECK (VALUE >= '0001-01-01 00:00:00+00' AND VALUE < '10000-01-01 00:00:00+00');
CREATE DOMAIN workhorse_attempt_count AS integer
    CONSTRAINT workhorse_runtime_attempt_range CHECK (VALUE >= 0);
CREATE DOMAIN workhorse_stall_count AS integer
    CONSTRAINT workhorse_runtime_stall_count_range CHECK (VALUE >= 0);
CREATE DOMAIN workhorse_pending_count AS integer
    CONSTRAINT workhorse_runtime_pending_range CHECK (VALUE >= 0);
CREATE DOMAIN workhorse_outcome_state AS text
    CONSTRAINT workhorse_outcome_state CHECK (VALUE IN ('succeeded', 'failed', 'canceled'));
-- The lifecycle changes the SQL functions record (states.EventKind).
CREATE DOMAIN workhorse_event_kind AS text
    CONSTRAINT workhorse_event_kind CHECK (VALUE IN (
        'enqueued', 'promoted', 'claimed', 'succeeded', 'retry_scheduled',
        'failed', 'released', 'stalled', 'made_due', 'retried', 'canceled',
        'unblocked', 'cancel_requested', 'slept'));
CREATE DOMAIN workhorse_attempt_outcome AS text
    CONSTRAINT workhorse_attempt_outcome
    CHECK (VALUE IN ('succeeded', 'failed', 'timed_out', 'stalled', 'canceled', 'slept'));
-- The rule of limits.CHECKPOINT_NAME_RE.
CREATE DOMAIN workhorse_checkpoint_name AS text
    CONSTRAINT workhorse_checkpoint_name_format
    CHECK (VALUE ~ '^[A-Za-z0-9_][A-Za-z0-9_.:-]*$' AND length(VALUE) <= 100);
-- 'checkpoint': result is the stage's JSON result. 'sleep': result is
-- {"wake_at": <timestamptz>}, the time the job slept until.
CREATE DOMAIN workhorse_checkpoint_kind AS text
    CONSTRAINT workhorse_checkpoint_kind CHECK (VALUE IN ('checkpoint', 'sleep'));

CREATE SEQUENCE workhorse_job_id_seq;

CREATE TABLE workhorse_job (
    id              bigint PRIMARY KEY DEFAULT nextval('workhorse_job_id_seq'),
    name            workhorse_job_name NOT NULL,
    queue           workhorse_queue_name NOT NULL,
    payload         workhorse_payload NOT NULL,
    max_attempts    workhorse_max_attempts NOT NULL,
    -- Column defaults come from workhorse_job_defaults_v1(), like enqueue's.
    priority        workhorse_priority NOT NULL
        DEFAULT (workhorse_job_defaults_v1() ->> 'priority')::smallint,
    timeout         workhorse_timeout,
    -- The job's retry policy; NULL for the default one (the 'backoff' of
    -- workhorse_job_defaults_v1(), which workhorse_backoff_delay_v1 reads for
    -- a NULL policy), so most jobs store no bytes for it (93 a row otherwise).
    backoff         workhorse_backoff,
    max_stalled     workhorse_max_stalled NOT NULL
        DEFAULT (workhorse_job_defaults_v1() ->> 'max_stalled')::integer,
    idempotency_key workhorse_idempotency_key,
    trace_context   jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    -- When the job was first due, if not at its creation (a run_at or a
    -- delay); NULL, and so no bytes, for the common job that is due at once.
    -- The timeline's 'enqueued' entry is read from this row (no event is
    -- stored for it).
    first_due_at    timestamptz,
    -- How a job with prerequisites (workhorse_job_dependency) settles; NULL
    -- for a job without any (workhorse_settle_dependents_v1 applies it).
    dependency_policy workhorse_dependency_policy
);
ALTER SEQUENCE workhorse_job_id_seq OWNED BY workhorse_job.id;

-- One value per operator retry: the retried job's new life starts its fence
-- at nextval * 2^32 (workhorse_retry_v1 says why that is past every fence
-- it had). Not cached per session (CACHE 1, the default): a later retry of
-- a job must draw a larger value, whichever session makes it.
CREATE SEQUENCE workhorse_job_life_seq;

-- An idempotency key names one job of a type for as long as the job row exists.
CREATE UNIQUE INDEX workhorse_job_idempotency
    ON workhorse_job (name, idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE workhorse_job_runtime (
    job_id               bigint PRIMARY KEY,
    -- queue and priority are copied from workhorse_job so that the claim reads
    -- one narrow index and never touches the identity row to choose.
    queue                text NOT NULL,
    priority             smallint NOT NULL,
    state                workhorse_live_state NOT NULL,
    run_at               workhorse_run_at NOT NULL,
    attempt              workhorse_attempt_count NOT NULL DEFAULT 0,
    stall_count          workhorse_stall_count NOT NULL DEFAULT 0,
    worker_id            text,
    fence                bigint NOT NULL DEFAULT 0,
    lease_expires_at     timestamptz,
    attempt_started_at   timestamptz,
    cancel_requested     boolean NOT NULL DEFAULT false,
    -- Prerequisites of a blocked job that have not ended yet: set at enqueue,
    -- counted down by workhorse_settle_dependents_v1, up by a retry of one.
    pending_dependencies workhorse_pending_count NOT NULL DEFAULT 0,
    -- An active row has an owner and a lease; no other row has either.
    CONSTRAINT workhorse_runtime_owner CHECK (
        (state = 'active') = (worker_id IS NOT NULL)
        AND (state = 'active') = (lease_expires_at IS NOT NULL)
        AND (state = 'active') = (attempt_started_at IS NOT NULL)
    )
) WITH (fillfactor = 70);

-- One partial index per query: the claim (ready, best first), promotion and
-- the next-due lookup (scheduled by time), recovery (active by lease expiry).
-- Terminal jobs have no runtime row, so none of these grows with history.
CREATE INDEX workhorse_runtime_ready
    ON workhorse_job_runtime (queue, priority DESC, run_at, job_id) WHERE state = 'ready';
CREATE INDEX workhorse_runtime_scheduled
    ON workhorse_job_runtime (queue, run_at) WHERE state = 'scheduled';
CREATE INDEX workhorse_runtime_lease
    ON workhorse_job_runtime (lease_expires_at) WHERE state = 'active';

-- Dependency edges: job_id waits for prerequisite_id. Written once, at the
-- dependent's enqueue, and only to jobs that already exist, so the edges
-- can never form a cycle. They stay after both jobs end (the admin shows
-- them) and go with the dependent's retention.
--
-- The primary key leads with prerequisite_id: every finish asks "who waits
-- for these jobs?", and no other index may offer an answer to it. With the
-- key the other way round, edge statistics skewed by a fan-out (10,000
-- edges on one prerequisite) made the planner walk the whole key for each
-- id of a plain batch, none of which had an edge (0.1 ms an id). The
-- dependent's own reads (its snapshot, retention) use the job_id index.
CREATE TABLE workhorse_job_dependency (
    prerequisite_id bigint NOT NULL,
    job_id          bigint NOT NULL,
    PRIMARY KEY (prerequisite_id, job_id),
    CONSTRAINT workhorse_dependency_earlier CHECK (prerequisite_id < job_id)
);
CREATE INDEX workhorse_job_dependency_job ON workhorse_job_dependency (job_id);
-- Most jobs have no dependents and most others a few; a live fan-out makes
-- ANALYZE believe the opposite (one prerequisite holding every edge), and
-- the planner then answers "does anyone wait for job N?" with a scan that
-- it expects to stop at the first row and that reads every edge. Measured
-- with a 10,000-job fan-out live: a 100-job success took 48 ms instead of
-- 2.5. Fixing the estimate at two edges per prerequisite keeps the probes.
ALTER TABLE workhorse_job_dependency ALTER COLUMN prerequisite_id SET (n_distinct = -0.5);

CREATE TABLE workhorse_job_outcome (
    job_id      bigint PRIMARY KEY,
    state       workhorse_outcome_state NOT NULL,
    result      jsonb,
    error       jsonb,
    attempts    integer NOT NULL,
    stall_count integer NOT NULL DEFAULT 0,
    finished_at timestamptz NOT NULL DEFAULT now()
);

-- Operator reads page through creation order (job_id grows with it); claims
-- never touch this projection.
CREATE TABLE workhorse_job_query (
    job_id     bigint PRIMARY KEY,
    queue      text NOT NULL,
    name       text NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX workhorse_job_query_queue ON workhorse_job_query (queue, job_id);
CREATE INDEX workhorse_job_query_name ON workhorse_job_query (name, job_id);

-- Append-only history, partitioned by day and retired by dropping partitions.
-- The default partitions catch rows for a day whose partition is missing, so
-- no write ever fails for want of a partition.
CREATE SEQUENCE workhorse_job_event_id_seq;
CREATE TABLE workhorse_job_event (
    id        bigint NOT NULL DEFAULT nextval('workhorse_job_event_id_seq'),
    job_id    bigint NOT NULL,
    at        timestamptz NOT NULL DEFAULT now(),
    kind      workhorse_event_kind NOT NULL,
    attempt   integer,
    worker_id text,
    data      jsonb
) PARTITION BY RANGE (at);
CREATE INDEX workhorse_job_event_job ON workhorse_job_event (job_id, at, id);
CREATE TABLE workhorse_job_event_default PARTITION OF workhorse_job_event DEFAULT;

CREATE SEQUENCE workhorse_attempt_history_id_seq;
CREATE TABLE workhorse_attempt_history (
    id          bigint NOT NULL DEFAULT nextval('workhorse_attempt_history_id_seq'),
    job_id      bigint NOT NULL,
    attempt     integer NOT NULL,
    outcome     workhorse_attempt_outcome NOT NULL,
    worker_id   text NOT NULL,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT now(),
    error       jsonb
) PARTITION BY RANGE (finished_at);
CREATE INDEX workhorse_attempt_history_job ON workhorse_attempt_history (job_id, finished_at, id);
CREATE TABLE workhorse_attempt_history_default PARTITION OF workhorse_attempt_history DEFAULT;

-- The completed stages of a job (ctx.checkpoint) and the durable sleeps it
-- took (ctx.sleep), one row per name. Only workhorse_checkpoint_v1 and
-- workhorse_sleep_many_v1 write it, each under the fence of the run that
-- holds the job; the rows stay readable after the job ends and are deleted
-- with the job by retention (workhorse_prune_v1). No foreign key, like the
-- runtime and outcome rows: a key check would lock the job row on every write.
CREATE TABLE workhorse_job_checkpoint (
    job_id     bigint NOT NULL,
    name       workhorse_checkpoint_name NOT NULL,
    kind       workhorse_checkpoint_kind NOT NULL DEFAULT 'checkpoint',
    result     jsonb,
    written_at timestamptz NOT NULL DEFAULT now(),
    attempt    integer NOT NULL,
    PRIMARY KEY (job_id, name)
);

-- Per-queue policy set by operators. A queue without a row runs unpaused.
CREATE TABLE workhorse_queue (
    name       text PRIMARY KEY,
    paused     boolean NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL DEFAULT now(),
    -- Queue limits, enforced by workhorse_claim_many_v1 for every worker:
    -- at most concurrency_limit active jobs, and at most rate_limit claims in
    -- any rate_period. NULL is no limit. rate_starts and rate_counts are the
    -- durable record of the claims of the last rate_period: one entry per
    -- claim call (its database time, and how many jobs it started), pruned
    -- by each claim; they never hold more than rate_limit entries.
    concurrency_limit integer
        CONSTRAINT workhorse_queue_concurrency_limit_range CHECK (concurrency_limit BETWEEN 1 AND 100000),
    rate_limit  integer
        CONSTRAINT workhorse_queue_rate_limit_range CHECK (rate_limit BETWEEN 1 AND 10000),
    rate_period interval
        CONSTRAINT workhorse_queue_rate_period_positive CHECK (rate_period > interval '0'),
    rate_starts timestamptz[] NOT NULL DEFAULT '{}',
    rate_counts integer[] NOT NULL DEFAULT '{}',
    -- A claim was held back by concurrency_limit since a finish last woke the
    -- queue's workers: set by the claim that was, cleared by the end of a
    -- running job of the queue, which then NOTIFYs its channel. A finish in
    -- a queue nobody waits on sends nothing (docs/worker.md, "Queue limits").
    held_back   boolean NOT NULL DEFAULT false,
    CONSTRAINT workhorse_queue_rate_pair CHECK ((rate_limit IS NULL) = (rate_period IS NULL)),
    CONSTRAINT workhorse_queue_rate_record CHECK (cardinality(rate_starts) = cardinality(rate_counts))
);

-- The installed schema version; the system check and the worker compare it
-- with the version the Python code speaks.
CREATE TABLE workhorse_schema (
    singleton boolean PRIMARY KEY DEFAULT true CONSTRAINT workhorse_schema_singleton CHECK (singleton),
    version   integer NOT NULL
);
INSERT INTO workhorse_schema (version) VALUES (1);
