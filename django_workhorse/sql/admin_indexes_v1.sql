-- Indexes for the operator's reads and for retention, off the claim path.
--
-- Failed and canceled outcomes are few next to succeeded ones, so a list of
-- failed jobs found them by scanning every outcome. A partial index keeps
-- them at hand and costs a successful finish nothing (its row is not in it).
CREATE INDEX workhorse_outcome_unsuccessful
    ON workhorse_job_outcome (state, job_id) WHERE state <> 'succeeded';

-- Outcome rows are appended in finished_at order, so a BRIN index (a few
-- pages for millions of rows, nearly free to maintain) finds the recent
-- window for the queue dashboard and the old rows for retention without a
-- B-tree insert on every finish.
CREATE INDEX workhorse_outcome_finished_brin
    ON workhorse_job_outcome USING brin (finished_at) WITH (pages_per_range = 16);

-- Blocked jobs by queue, for the dashboard's counts (the other live states
-- have their claim-path indexes). Only blocked rows enter it.
CREATE INDEX workhorse_runtime_blocked
    ON workhorse_job_runtime (queue) WHERE state = 'blocked';

-- Failed and canceled outcomes by error type, for the failures view's links
-- (the job list filtered by state, name and error type). Without it the
-- planner, guessing the type rare, read every failed outcome and sorted
-- them: 204 ms for the newest 50 of 20,000 failures at 1,000,000 jobs,
-- 0.2 ms with it. Partial like workhorse_outcome_unsuccessful, so a
-- success writes nothing to it.
CREATE INDEX workhorse_outcome_error_type
    ON workhorse_job_outcome ((error ->> 'type'), job_id) WHERE state <> 'succeeded';
