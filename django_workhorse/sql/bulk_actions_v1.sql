-- Filter-wide operator actions ("retry all", "cancel all"), one row each.
--
-- Asking for one (workhorse_bulk_request_v1) writes this row and enqueues a
-- job on the internal queue workhorse.operator; that job walks the matching
-- jobs in batches (workhorse_bulk_step_v1), each batch one transaction that
-- acts on its jobs and moves this row's position and counts with them, so a
-- worker killed between batches leaves a row that says exactly how far the
-- action got, and the next run goes on from there (docs/admin.md).
CREATE TABLE workhorse_bulk_action (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    action          text NOT NULL CHECK (action IN ('retry', 'cancel')),
    -- The filter, as the job list takes it.
    queue           text,
    name            text,
    state           text,
    created_after   timestamptz,
    created_before  timestamptz,
    -- The states walked, in this order: those of the filter the action
    -- can change (failed, canceled for a retry; blocked, scheduled, ready,
    -- active for a cancel).
    states          text[] NOT NULL CHECK (cardinality(states) BETWEEN 1 AND 4),
    filter_key      text NOT NULL,
    reason          text,
    requested_by    text,
    -- How the asker's right to act was established (the Django admin:
    -- the permission it checked), recorded when it was asked.
    permission      text,
    requested_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- The newest job when the action was asked for: no job after it is touched.
    bound_id        bigint NOT NULL,
    batch_size      integer NOT NULL CHECK (batch_size BETWEEN 1 AND 1000),
    status          text NOT NULL DEFAULT 'queued'
                    CHECK (status IN ('queued', 'running', 'finished', 'canceled')),
    -- The workhorse.operator job running it (in WORKHORSE['DATABASE']).
    job_id          bigint,
    -- Jobs matching when the walk started; once finished, those it walked.
    total           bigint,
    -- Where the walk stands: states[phase], below job id position.
    phase           integer NOT NULL DEFAULT 1,
    position        bigint,
    matched         bigint NOT NULL DEFAULT 0,
    changed         bigint NOT NULL DEFAULT 0,
    requested       bigint NOT NULL DEFAULT 0,
    skipped         bigint NOT NULL DEFAULT 0,
    batches         integer NOT NULL DEFAULT 0,
    started_at      timestamptz,
    progressed_at   timestamptz,
    finished_at     timestamptz,
    cancel_requested_at timestamptz,
    canceled_by     text
);

-- One live action per filter: the idempotency key of an action is its filter.
CREATE UNIQUE INDEX workhorse_bulk_action_live_filter ON workhorse_bulk_action (filter_key)
    WHERE status IN ('queued', 'running');
