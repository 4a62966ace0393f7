-- The schema the migrations install; rewritten by `make schema`.

CREATE DOMAIN workhorse_attempt_count AS integer CONSTRAINT workhorse_runtime_attempt_range CHECK ((VALUE >= 0));
CREATE DOMAIN workhorse_attempt_outcome AS text CONSTRAINT workhorse_attempt_outcome CHECK ((VALUE = ANY (ARRAY['succeeded'::text, 'failed'::text, 'timed_out'::text, 'stalled'::text, 'canceled'::text, 'slept'::text])));
CREATE DOMAIN workhorse_backoff AS jsonb CONSTRAINT workhorse_job_backoff_policy CHECK (((jsonb_typeof(VALUE) = 'object'::text) AND (COALESCE((VALUE ->> 'kind'::text), 'exponential'::text) = ANY (ARRAY['exponential'::text, 'fixed'::text])) AND (NOT (VALUE @? '$?((((((((((((@."kind".type() != "string" || @."base".type() != "number") || @."base" < 0) || @."base" > 3155760000) || @."max".type() != "number") || @."max" < 0) || @."max" > 3155760000) || @."delay".type() != "number") || @."delay" < 0) || @."delay" > 3155760000) || @."jitter".type() != "number") || @."jitter" < 0) || @."jitter" > 1)'::jsonpath))));
CREATE DOMAIN workhorse_checkpoint_kind AS text CONSTRAINT workhorse_checkpoint_kind CHECK ((VALUE = ANY (ARRAY['checkpoint'::text, 'sleep'::text])));
CREATE DOMAIN workhorse_checkpoint_name AS text CONSTRAINT workhorse_checkpoint_name_format CHECK (((VALUE ~ '^[A-Za-z0-9_][A-Za-z0-9_.:-]*$'::text) AND (length(VALUE) <= 100)));
CREATE DOMAIN workhorse_dependency_policy AS text CONSTRAINT workhorse_job_dependency_policy CHECK ((VALUE = ANY (ARRAY['all_succeeded'::text, 'all_finished'::text, 'any_succeeded'::text])));
CREATE DOMAIN workhorse_event_kind AS text CONSTRAINT workhorse_event_kind CHECK ((VALUE = ANY (ARRAY['enqueued'::text, 'promoted'::text, 'claimed'::text, 'succeeded'::text, 'retry_scheduled'::text, 'failed'::text, 'released'::text, 'stalled'::text, 'made_due'::text, 'retried'::text, 'canceled'::text, 'unblocked'::text, 'cancel_requested'::text, 'slept'::text])));
CREATE DOMAIN workhorse_idempotency_key AS text CONSTRAINT workhorse_job_idempotency_key_length CHECK (((length(VALUE) >= 1) AND (length(VALUE) <= 255)));
CREATE DOMAIN workhorse_job_name AS text CONSTRAINT workhorse_job_name_format CHECK (((VALUE ~ '^[A-Za-z_][A-Za-z0-9_.:-]*$'::text) AND (length(VALUE) <= 200)));
CREATE DOMAIN workhorse_live_state AS text CONSTRAINT workhorse_runtime_state CHECK ((VALUE = ANY (ARRAY['blocked'::text, 'scheduled'::text, 'ready'::text, 'active'::text])));
CREATE DOMAIN workhorse_max_attempts AS integer CONSTRAINT workhorse_job_max_attempts_range CHECK (((VALUE >= 1) AND (VALUE <= 1000)));
CREATE DOMAIN workhorse_max_stalled AS integer CONSTRAINT workhorse_job_max_stalled_range CHECK (((VALUE >= 0) AND (VALUE <= 1000)));
CREATE DOMAIN workhorse_outcome_state AS text CONSTRAINT workhorse_outcome_state CHECK ((VALUE = ANY (ARRAY['succeeded'::text, 'failed'::text, 'canceled'::text])));
CREATE DOMAIN workhorse_payload AS jsonb CONSTRAINT workhorse_job_payload_object CHECK ((jsonb_typeof(VALUE) = 'object'::text));
CREATE DOMAIN workhorse_pending_count AS integer CONSTRAINT workhorse_runtime_pending_range CHECK ((VALUE >= 0));
CREATE DOMAIN workhorse_priority AS smallint CONSTRAINT workhorse_job_priority_range CHECK (((VALUE >= '-100'::integer) AND (VALUE <= 100)));
CREATE DOMAIN workhorse_queue_name AS text CONSTRAINT workhorse_job_queue_format CHECK (((VALUE ~ '^[A-Za-z0-9_][A-Za-z0-9_.-]*$'::text) AND (length(VALUE) <= 53)));
CREATE DOMAIN workhorse_run_at AS timestamp with time zone CONSTRAINT workhorse_runtime_run_at_range CHECK (((VALUE >= '0001-01-01 00:00:00+00'::timestamp with time zone) AND (VALUE < '10000-01-01 00:00:00+00'::timestamp with time zone)));
CREATE DOMAIN workhorse_stall_count AS integer CONSTRAINT workhorse_runtime_stall_count_range CHECK ((VALUE >= 0));
CREATE DOMAIN workhorse_timeout AS interval CONSTRAINT workhorse_job_timeout_positive CHECK ((VALUE > '00:00:00'::interval));

CREATE TABLE workhorse_attempt_history (
    id bigint NOT NULL DEFAULT nextval('workhorse_attempt_history_id_seq'::regclass),
    job_id bigint NOT NULL,
    attempt integer NOT NULL,
    outcome workhorse_attempt_outcome NOT NULL,
    worker_id text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL DEFAULT now(),
    error jsonb
) PARTITION BY RANGE (finished_at);

CREATE TABLE workhorse_attempt_history_default PARTITION OF workhorse_attempt_history DEFAULT;

CREATE TABLE workhorse_bulk_action (
    id bigint NOT NULL,
    action text NOT NULL,
    queue text,
    name text,
    state text,
    created_after timestamp with time zone,
    created_before timestamp with time zone,
    states text[] NOT NULL,
    filter_key text NOT NULL,
    reason text,
    requested_by text,
    permission text,
    requested_at timestamp with time zone NOT NULL DEFAULT clock_timestamp(),
    bound_id bigint NOT NULL,
    batch_size integer NOT NULL,
    status text NOT NULL DEFAULT 'queued'::text,
    job_id bigint,
    total bigint,
    phase integer NOT NULL DEFAULT 1,
    position bigint,
    matched bigint NOT NULL DEFAULT 0,
    changed bigint NOT NULL DEFAULT 0,
    requested bigint NOT NULL DEFAULT 0,
    skipped bigint NOT NULL DEFAULT 0,
    batches integer NOT NULL DEFAULT 0,
    started_at timestamp with time zone,
    progressed_at timestamp with time zone,
    finished_at timestamp with time zone,
    cancel_requested_at timestamp with time zone,
    canceled_by text,
    CONSTRAINT workhorse_bulk_action_action_check CHECK ((action = ANY (ARRAY['retry'::text, 'cancel'::text]))),
    CONSTRAINT workhorse_bulk_action_batch_size_check CHECK (((batch_size >= 1) AND (batch_size <= 1000))),
    CONSTRAINT workhorse_bulk_action_pkey PRIMARY KEY (id),
    CONSTRAINT workhorse_bulk_action_states_check CHECK (((cardinality(states) >= 1) AND (cardinality(states) <= 4))),
    CONSTRAINT workhorse_bulk_action_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'finished'::text, 'canceled'::text])))
);

CREATE TABLE workhorse_failure_hour (
    hour timestamp with time zone NOT NULL,
    name text NOT NULL,
    error_type text NOT NULL,
    shard smallint NOT NULL,
    failures bigint NOT NULL DEFAULT 0,
    last_job_id bigint NOT NULL,
    last_at timestamp with time zone NOT NULL,
    CONSTRAINT workhorse_failure_hour_pkey PRIMARY KEY (hour, name, error_type, shard)
) WITH (fillfactor=70);

CREATE TABLE workhorse_job (
    id bigint NOT NULL DEFAULT nextval('workhorse_job_id_seq'::regclass),
    name workhorse_job_name NOT NULL,
    queue workhorse_queue_name NOT NULL,
    payload workhorse_payload NOT NULL,
    max_attempts workhorse_max_attempts NOT NULL,
    priority workhorse_priority NOT NULL DEFAULT ((workhorse_job_defaults_v1() ->> 'priority'::text))::smallint,
    timeout workhorse_timeout,
    backoff workhorse_backoff,
    max_stalled workhorse_max_stalled NOT NULL DEFAULT ((workhorse_job_defaults_v1() ->> 'max_stalled'::text))::integer,
    idempotency_key workhorse_idempotency_key,
    trace_context jsonb,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    first_due_at timestamp with time zone,
    dependency_policy workhorse_dependency_policy,
    CONSTRAINT workhorse_job_pkey PRIMARY KEY (id)
);

CREATE TABLE workhorse_job_checkpoint (
    job_id bigint NOT NULL,
    name workhorse_checkpoint_name NOT NULL,
    kind workhorse_checkpoint_kind NOT NULL DEFAULT 'checkpoint'::text,
    result jsonb,
    written_at timestamp with time zone NOT NULL DEFAULT now(),
    attempt integer NOT NULL,
    CONSTRAINT workhorse_job_checkpoint_pkey PRIMARY KEY (job_id, name)
);

CREATE TABLE workhorse_job_dependency (
    prerequisite_id bigint NOT NULL,
    job_id bigint NOT NULL,
    CONSTRAINT workhorse_dependency_earlier CHECK ((prerequisite_id < job_id)),
    CONSTRAINT workhorse_job_dependency_pkey PRIMARY KEY (prerequisite_id, job_id)
);

CREATE TABLE workhorse_job_event (
    id bigint NOT NULL DEFAULT nextval('workhorse_job_event_id_seq'::regclass),
    job_id bigint NOT NULL,
    at timestamp with time zone NOT NULL DEFAULT now(),
    kind workhorse_event_kind NOT NULL,
    attempt integer,
    worker_id text,
    data jsonb
) PARTITION BY RANGE (at);

CREATE TABLE workhorse_job_event_default PARTITION OF workhorse_job_event DEFAULT;

CREATE TABLE workhorse_job_outcome (
    job_id bigint NOT NULL,
    state workhorse_outcome_state NOT NULL,
    result jsonb,
    error jsonb,
    attempts integer NOT NULL,
    stall_count integer NOT NULL DEFAULT 0,
    finished_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT workhorse_job_outcome_pkey PRIMARY KEY (job_id)
);

CREATE TABLE workhorse_job_query (
    job_id bigint NOT NULL,
    queue text NOT NULL,
    name text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT workhorse_job_query_pkey PRIMARY KEY (job_id)
);

CREATE TABLE workhorse_job_runtime (
    job_id bigint NOT NULL,
    queue text NOT NULL,
    priority smallint NOT NULL,
    state workhorse_live_state NOT NULL,
    run_at workhorse_run_at NOT NULL,
    attempt workhorse_attempt_count NOT NULL DEFAULT 0,
    stall_count workhorse_stall_count NOT NULL DEFAULT 0,
    worker_id text,
    fence bigint NOT NULL DEFAULT 0,
    lease_expires_at timestamp with time zone,
    attempt_started_at timestamp with time zone,
    cancel_requested boolean NOT NULL DEFAULT false,
    pending_dependencies workhorse_pending_count NOT NULL DEFAULT 0,
    CONSTRAINT workhorse_job_runtime_pkey PRIMARY KEY (job_id),
    CONSTRAINT workhorse_runtime_owner CHECK (((((state)::text = 'active'::text) = (worker_id IS NOT NULL)) AND (((state)::text = 'active'::text) = (lease_expires_at IS NOT NULL)) AND (((state)::text = 'active'::text) = (attempt_started_at IS NOT NULL))))
) WITH (fillfactor=70);

CREATE TABLE workhorse_queue (
    name text NOT NULL,
    paused boolean NOT NULL DEFAULT false,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    concurrency_limit integer,
    rate_limit integer,
    rate_period interval,
    rate_starts timestamp with time zone[] NOT NULL DEFAULT '{}'::timestamp with time zone[],
    rate_counts integer[] NOT NULL DEFAULT '{}'::integer[],
    held_back boolean NOT NULL DEFAULT false,
    CONSTRAINT workhorse_queue_concurrency_limit_range CHECK (((concurrency_limit >= 1) AND (concurrency_limit <= 100000))),
    CONSTRAINT workhorse_queue_pkey PRIMARY KEY (name),
    CONSTRAINT workhorse_queue_rate_limit_range CHECK (((rate_limit >= 1) AND (rate_limit <= 10000))),
    CONSTRAINT workhorse_queue_rate_pair CHECK (((rate_limit IS NULL) = (rate_period IS NULL))),
    CONSTRAINT workhorse_queue_rate_period_positive CHECK ((rate_period > '00:00:00'::interval)),
    CONSTRAINT workhorse_queue_rate_record CHECK ((cardinality(rate_starts) = cardinality(rate_counts)))
);

CREATE TABLE workhorse_queue_minute (
    minute timestamp with time zone NOT NULL,
    queue text NOT NULL,
    shard smallint NOT NULL,
    succeeded bigint NOT NULL DEFAULT 0,
    failed bigint NOT NULL DEFAULT 0,
    canceled bigint NOT NULL DEFAULT 0,
    CONSTRAINT workhorse_queue_minute_pkey PRIMARY KEY (minute, queue, shard)
) WITH (fillfactor=50);

CREATE TABLE workhorse_schedule (
    name text NOT NULL,
    job_name text NOT NULL,
    cron text NOT NULL,
    timezone text NOT NULL DEFAULT 'UTC'::text,
    payload jsonb NOT NULL DEFAULT '{}'::jsonb,
    job_options jsonb NOT NULL DEFAULT '{}'::jsonb,
    catch_up text NOT NULL DEFAULT 'latest'::text,
    paused boolean NOT NULL DEFAULT false,
    next_run_at timestamp with time zone,
    last_slot_at timestamp with time zone,
    last_job_id bigint,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT workhorse_schedule_catch_up CHECK ((catch_up = ANY (ARRAY['latest'::text, 'all'::text]))),
    CONSTRAINT workhorse_schedule_job_options_object CHECK ((jsonb_typeof(job_options) = 'object'::text)),
    CONSTRAINT workhorse_schedule_name_format CHECK (((name ~ '^[A-Za-z0-9_][A-Za-z0-9_.:-]*$'::text) AND (length(name) <= 200))),
    CONSTRAINT workhorse_schedule_payload_object CHECK ((jsonb_typeof(payload) = 'object'::text)),
    CONSTRAINT workhorse_schedule_pkey PRIMARY KEY (name)
);

CREATE TABLE workhorse_schema (
    singleton boolean NOT NULL DEFAULT true,
    version integer NOT NULL,
    CONSTRAINT workhorse_schema_pkey PRIMARY KEY (singleton),
    CONSTRAINT workhorse_schema_singleton CHECK (singleton)
);

CREATE TABLE workhorse_worker (
    worker_id text NOT NULL,
    info jsonb NOT NULL,
    first_seen_at timestamp with time zone NOT NULL DEFAULT now(),
    last_seen_at timestamp with time zone NOT NULL DEFAULT now(),
    CONSTRAINT workhorse_worker_pkey PRIMARY KEY (worker_id)
) WITH (fillfactor=50);

CREATE INDEX workhorse_attempt_history_job ON ONLY public.workhorse_attempt_history USING btree (job_id, finished_at, id);
CREATE UNIQUE INDEX workhorse_bulk_action_live_filter ON public.workhorse_bulk_action USING btree (filter_key) WHERE (status = ANY (ARRAY['queued'::text, 'running'::text]));
CREATE UNIQUE INDEX workhorse_bulk_action_pkey ON public.workhorse_bulk_action USING btree (id);
CREATE UNIQUE INDEX workhorse_failure_hour_pkey ON public.workhorse_failure_hour USING btree (hour, name, error_type, shard);
CREATE UNIQUE INDEX workhorse_job_checkpoint_pkey ON public.workhorse_job_checkpoint USING btree (job_id, name);
CREATE INDEX workhorse_job_dependency_job ON public.workhorse_job_dependency USING btree (job_id);
CREATE UNIQUE INDEX workhorse_job_dependency_pkey ON public.workhorse_job_dependency USING btree (prerequisite_id, job_id);
CREATE INDEX workhorse_job_event_job ON ONLY public.workhorse_job_event USING btree (job_id, at, id);
CREATE UNIQUE INDEX workhorse_job_idempotency ON public.workhorse_job USING btree (name, idempotency_key) WHERE (idempotency_key IS NOT NULL);
CREATE UNIQUE INDEX workhorse_job_outcome_pkey ON public.workhorse_job_outcome USING btree (job_id);
CREATE UNIQUE INDEX workhorse_job_pkey ON public.workhorse_job USING btree (id);
CREATE INDEX workhorse_job_query_name ON public.workhorse_job_query USING btree (name, job_id);
CREATE UNIQUE INDEX workhorse_job_query_pkey ON public.workhorse_job_query USING btree (job_id);
CREATE INDEX workhorse_job_query_queue ON public.workhorse_job_query USING btree (queue, job_id);
CREATE UNIQUE INDEX workhorse_job_runtime_pkey ON public.workhorse_job_runtime USING btree (job_id);
CREATE INDEX workhorse_outcome_error_type ON public.workhorse_job_outcome USING btree (((error ->> 'type'::text)), job_id) WHERE ((state)::text <> 'succeeded'::text);
CREATE INDEX workhorse_outcome_finished_brin ON public.workhorse_job_outcome USING brin (finished_at) WITH (pages_per_range='16');
CREATE INDEX workhorse_outcome_unsuccessful ON public.workhorse_job_outcome USING btree (state, job_id) WHERE ((state)::text <> 'succeeded'::text);
CREATE UNIQUE INDEX workhorse_queue_minute_pkey ON public.workhorse_queue_minute USING btree (minute, queue, shard);
CREATE UNIQUE INDEX workhorse_queue_pkey ON public.workhorse_queue USING btree (name);
CREATE INDEX workhorse_runtime_active ON public.workhorse_job_runtime USING btree (queue, lease_expires_at) WHERE ((state)::text = 'active'::text);
CREATE INDEX workhorse_runtime_blocked ON public.workhorse_job_runtime USING btree (queue) WHERE ((state)::text = 'blocked'::text);
CREATE INDEX workhorse_runtime_ready ON public.workhorse_job_runtime USING btree (queue, priority DESC, run_at, job_id) WHERE ((state)::text = 'ready'::text);
CREATE INDEX workhorse_runtime_scheduled ON public.workhorse_job_runtime USING btree (queue, run_at) WHERE ((state)::text = 'scheduled'::text);
CREATE INDEX workhorse_schedule_due ON public.workhorse_schedule USING btree (next_run_at) WHERE (NOT paused);
CREATE UNIQUE INDEX workhorse_schedule_pkey ON public.workhorse_schedule USING btree (name);
CREATE UNIQUE INDEX workhorse_schema_pkey ON public.workhorse_schema USING btree (singleton);
CREATE UNIQUE INDEX workhorse_worker_pkey ON public.workhorse_worker USING btree (worker_id);

CREATE SEQUENCE workhorse_attempt_history_id_seq;
CREATE SEQUENCE workhorse_bulk_action_id_seq;
CREATE SEQUENCE workhorse_job_event_id_seq;
CREATE SEQUENCE workhorse_job_id_seq;
CREATE SEQUENCE workhorse_job_life_seq;

-- FUNCTION workhorse_backoff_delay_v1(p_backoff jsonb, p_attempt integer)
--   RETURNS double precision LANGUAGE sql -- body sha256 e8a94957ae10c16e
-- FUNCTION workhorse_bulk_cancel_v1(p_action_id bigint, p_by text)
--   RETURNS TABLE(status text, state text) LANGUAGE plpgsql -- body sha256 67386e5bb43afd15
-- FUNCTION workhorse_bulk_request_v1(p_action text, p_states text[], p_queue text, p_name text, p_state text, p_created_after timestamp with time zone, p_created_before timestamp with time zone, p_reason text, p_by text, p_permission text, p_batch_size integer, p_finished_before timestamp with time zone)
--   RETURNS TABLE(action_id bigint, inserted boolean) LANGUAGE plpgsql -- body sha256 9ac4f656e26085dc
-- FUNCTION workhorse_bulk_step_v1(p_action_id bigint, p_job_id bigint)
--   RETURNS SETOF workhorse_bulk_action LANGUAGE plpgsql -- body sha256 6395fc6f750d832a
-- FUNCTION workhorse_cancel_v1(p_job_id bigint, p_reason text, p_by text)
--   RETURNS TABLE(status text, state text) LANGUAGE plpgsql SET enable_seqscan=off -- body sha256 9e064e9e63b106da
-- FUNCTION workhorse_checkpoint_v1(p_job_id bigint, p_owner text, p_fence bigint, p_name text, p_result jsonb)
--   RETURNS TABLE(ok boolean, cancel_requested boolean) LANGUAGE plpgsql SET enable_seqscan=off -- body sha256 10bbead34bfef8d1
-- FUNCTION workhorse_claim_many_v1(p_worker text, p_queues text[], p_limits integer[], p_lease_seconds double precision)
--   RETURNS TABLE(job_id bigint, name text, queue text, payload jsonb, attempt integer, max_attempts integer, fence bigint, timeout_seconds double precision, lease_expires_at timestamp with time zone, cancel_requested boolean, trace_context jsonb, waited_seconds double precision, pickup_seconds double precision) LANGUAGE plpgsql SET enable_seqscan=off SET plan_cache_mode=force_generic_plan -- body sha256 48d1d676658e5b51
-- FUNCTION workhorse_count_jobs_v1(p_queue text, p_name text, p_state text, p_created_after timestamp with time zone, p_created_before timestamp with time zone, p_cap integer)
--   RETURNS bigint LANGUAGE plpgsql -- body sha256 23fdbdbdc7e89ea2
-- FUNCTION workhorse_end_runs_v1(p_job_ids bigint[], p_fences bigint[], p_worker text, p_states text[], p_results jsonb[], p_errors jsonb[], p_attempt_outcomes text[], p_attempt_errors jsonb[], p_event_data jsonb[], p_settle boolean)
--   RETURNS boolean[] LANGUAGE plpgsql -- body sha256 2921e5a9f2c5ca89
-- FUNCTION workhorse_enqueue_batch_v1(p_name text, p_payloads jsonb, p_queue text, p_max_attempts integer, p_priority integer, p_delay double precision, p_run_at timestamp with time zone, p_idempotency_key text, p_timeout double precision, p_backoff jsonb, p_max_stalled integer, p_trace_context jsonb)
--   RETURNS TABLE(job_id bigint, inserted boolean) LANGUAGE plpgsql SET enable_seqscan=off SET plan_cache_mode=force_generic_plan -- body sha256 d2e01aedb84badab
-- FUNCTION workhorse_enqueue_many_v1(p_jobs jsonb)
--   RETURNS TABLE(job_id bigint, inserted boolean) LANGUAGE plpgsql SET enable_seqscan=off -- body sha256 ebfab35fd19d3a82
-- FUNCTION workhorse_enqueue_v1(p_name text, p_queue text, p_payload jsonb, p_max_attempts integer, p_priority integer, p_delay double precision, p_run_at timestamp with time zone, p_idempotency_key text, p_timeout double precision, p_backoff jsonb, p_max_stalled integer, p_trace_context jsonb)
--   RETURNS TABLE(job_id bigint, inserted boolean) LANGUAGE sql -- body sha256 3d3e07c1f710d474
-- FUNCTION workhorse_ensure_partitions_v1(p_from date, p_days integer)
--   RETURNS integer LANGUAGE plpgsql SET search_path=public, pg_temp -- body sha256 f623a167321a512a
-- FUNCTION workhorse_fail_many_v1(p_worker text, p_job_ids bigint[], p_fences bigint[], p_errors jsonb[], p_kinds text[], p_retryable boolean[], p_delays double precision[])
--   RETURNS TABLE(job_id bigint, ok boolean, will_retry boolean, run_at timestamp with time zone, retry_in double precision, attempt integer, max_attempts integer, canceled boolean, reason text) LANGUAGE plpgsql SET enable_seqscan=off SET plan_cache_mode=force_generic_plan -- body sha256 9fd9d2e427969aae
-- FUNCTION workhorse_failures_v1(p_window interval)
--   RETURNS TABLE(name text, error_type text, failures bigint, last_job_id bigint, last_at timestamp with time zone) LANGUAGE sql -- body sha256 cdd51927e3080323
-- FUNCTION workhorse_failures_v2(p_window interval)
--   RETURNS TABLE(name text, error_type text, failures bigint, last_job_id bigint, last_at timestamp with time zone, unreadable text) LANGUAGE sql -- body sha256 03434d577ee34bef
-- FUNCTION workhorse_get_attempts_v1(p_job_id bigint)
--   RETURNS TABLE(attempt integer, outcome text, worker_id text, started_at timestamp with time zone, finished_at timestamp with time zone, error jsonb) LANGUAGE sql -- body sha256 7940123f6f2eff56
-- FUNCTION workhorse_get_checkpoints_v1(p_job_id bigint)
--   RETURNS TABLE(name text, kind text, result jsonb, written_at timestamp with time zone, attempt integer) LANGUAGE sql -- body sha256 ecd5b52586fa2c7c
-- FUNCTION workhorse_get_job_v1(p_job_id bigint)
--   RETURNS TABLE(job_id bigint, name text, queue text, payload jsonb, state text, priority smallint, current_attempt integer, max_attempts integer, stall_count integer, run_at timestamp with time zone, worker_id text, lease_expires_at timestamp with time zone, cancel_requested boolean, result jsonb, error jsonb, idempotency_key text, created_at timestamp with time zone, started_at timestamp with time zone, finished_at timestamp with time zone, dependency_policy text, pending_dependencies integer, prerequisites jsonb, dependents jsonb) LANGUAGE sql -- body sha256 f9356c8ac68f50cd
-- FUNCTION workhorse_heartbeat_many_v1(p_worker text, p_job_ids bigint[], p_fences bigint[], p_lease_seconds double precision, p_worker_info jsonb)
--   RETURNS TABLE(job_id bigint, renewed boolean, cancel_requested boolean, lease_expires_at timestamp with time zone) LANGUAGE plpgsql SET enable_seqscan=off -- body sha256 b04296e707b15da9
-- FUNCTION workhorse_job_defaults_v1()
--   RETURNS jsonb LANGUAGE sql -- body sha256 7d7b22c0cdcc0025
-- FUNCTION workhorse_job_timeline_v1(p_job_id bigint, p_after_at timestamp with time zone, p_after_rank integer, p_after_id bigint, p_limit integer)
--   RETURNS TABLE(at timestamp with time zone, rank integer, id bigint, source text, kind text, attempt integer, worker_id text, started_at timestamp with time zone, finished_at timestamp with time zone, error jsonb, data jsonb) LANGUAGE sql -- body sha256 1bf7c97addd813c6
-- FUNCTION workhorse_list_jobs_v1(p_queue text, p_name text, p_state text, p_created_after timestamp with time zone, p_created_before timestamp with time zone, p_before_id bigint, p_after_id bigint, p_limit integer, p_idempotency_key text, p_error_type text, p_name_prefix text, p_payload jsonb)
--   RETURNS TABLE(job_id bigint, name text, queue text, state text, priority smallint, attempt integer, max_attempts integer, stall_count integer, idempotency_key text, created_at timestamp with time zone, run_at timestamp with time zone, finished_at timestamp with time zone, error_type text, error_message text) LANGUAGE plpgsql -- body sha256 301e5e51f8464cb8
-- FUNCTION workhorse_list_schedules_v1()
--   RETURNS TABLE(name text, job_name text, queue text, cron text, timezone text, catch_up text, paused boolean, next_run_at timestamp with time zone, last_slot_at timestamp with time zone, last_job_id bigint, unreadable text) LANGUAGE sql -- body sha256 b4f7321cc3a15124
-- FUNCTION workhorse_list_workers_v1(p_seen_within interval)
--   RETURNS TABLE(worker_id text, info jsonb, first_seen_at timestamp with time zone, last_seen_at timestamp with time zone, seen_seconds_ago double precision) LANGUAGE sql -- body sha256 b3785623b36ce0c8
-- FUNCTION workhorse_list_workers_v2(p_seen_within interval)
--   RETURNS TABLE(worker_id text, info jsonb, first_seen_at timestamp with time zone, last_seen_at timestamp with time zone, seen_seconds_ago double precision, unreadable text) LANGUAGE sql -- body sha256 96d03a0c76097520
-- FUNCTION workhorse_live_queues_v1(p_names text[])
--   RETURNS TABLE(queue text) LANGUAGE sql -- body sha256 da403b4ff5499b3b
-- FUNCTION workhorse_live_workers_v1()
--   RETURNS text[] LANGUAGE plpgsql -- body sha256 164ff52a9ad46213
-- FUNCTION workhorse_lock_prerequisites_v1(p_ids bigint[])
--   RETURNS TABLE(missing_id bigint) LANGUAGE plpgsql -- body sha256 094a9b1064e4e23a
-- FUNCTION workhorse_lock_runs_v1(p_worker text, p_job_ids bigint[], p_fences bigint[])
--   RETURNS integer LANGUAGE plpgsql SET enable_seqscan=off -- body sha256 dfd87df470199c41
-- FUNCTION workhorse_make_due_v1(p_queues text[])
--   RETURNS integer LANGUAGE plpgsql -- body sha256 7bd90779f1bc82d4
-- FUNCTION workhorse_next_run_at_v1(p_queues text[])
--   RETURNS timestamp with time zone LANGUAGE plpgsql SET enable_seqscan=off -- body sha256 e314ccb5cd766055
-- FUNCTION workhorse_promote_v1(p_job_id bigint)
--   RETURNS TABLE(status text, state text) LANGUAGE plpgsql SET enable_seqscan=off -- body sha256 c28b991d4be2d602
-- FUNCTION workhorse_prune_v1(p_history_before timestamp with time zone, p_jobs_before timestamp with time zone, p_limit integer, p_dry_run boolean)
--   RETURNS TABLE(action text, target text, rows bigint) LANGUAGE plpgsql SET search_path=public, pg_temp -- body sha256 f9bcf5358b4173c5
-- FUNCTION workhorse_pulse_v1(p_worker text, p_seconds double precision)
--   RETURNS TABLE(alive_until timestamp with time zone, leads boolean) LANGUAGE plpgsql -- body sha256 cf09ee32b35912d8
-- FUNCTION workhorse_queue_depth_v1()
--   RETURNS TABLE(queue text, state text, jobs bigint) LANGUAGE sql -- body sha256 cc8cc935d5011d96
-- FUNCTION workhorse_queue_names_v1()
--   RETURNS TABLE(queue text) LANGUAGE sql -- body sha256 b4a32631f6afa333
-- FUNCTION workhorse_queue_stats_v1(p_window interval, p_buckets integer, p_count_limit integer)
--   RETURNS TABLE(queue text, paused boolean, blocked bigint, scheduled bigint, ready bigint, active bigint, succeeded bigint, failed bigint, canceled bigint, oldest_ready_at timestamp with time zone, oldest_ready_seconds double precision, finished_per_bucket bigint[], window_seconds double precision, capped text[], concurrency_limit integer, rate_limit integer, rate_period_seconds double precision) LANGUAGE plpgsql SET jit=off -- body sha256 043782b6fbfccbff
-- FUNCTION workhorse_recover_stalled_v1(p_limit integer)
--   RETURNS TABLE(job_id bigint, queue text, attempt integer, stall_count integer, failed boolean, name text, max_attempts integer, max_stalled integer, canceled boolean) LANGUAGE plpgsql SET enable_seqscan=off -- body sha256 b75f07960c2e1930
-- FUNCTION workhorse_refuse_named_twice_v1(p_caller text, p_job_ids bigint[])
--   RETURNS void LANGUAGE plpgsql -- body sha256 f09d469dee60e522
-- FUNCTION workhorse_release_many_v1(p_worker text, p_job_ids bigint[], p_fences bigint[])
--   RETURNS TABLE(job_id bigint, ok boolean, canceled boolean) LANGUAGE plpgsql SET enable_seqscan=off -- body sha256 e6c5411ce2ba2315
-- FUNCTION workhorse_requeue_runs_v1(p_job_ids bigint[], p_attempts integer[], p_workers text[], p_started_ats timestamp with time zone[], p_run_ats timestamp with time zone[], p_give_back boolean, p_attempt_outcomes text[], p_attempt_errors jsonb[], p_event_kinds text[], p_event_data jsonb[])
--   RETURNS void LANGUAGE plpgsql -- body sha256 f5d17dc33fb19a5c
-- FUNCTION workhorse_retry_v1(p_job_id bigint, p_reason text, p_ignore_dependencies boolean)
--   RETURNS TABLE(status text, state text, prerequisite bigint, prerequisite_state text) LANGUAGE plpgsql SET enable_seqscan=off -- body sha256 97311a00972cd3fa
-- FUNCTION workhorse_schedule_due_v1()
--   RETURNS TABLE(name text, cron text, timezone text, catch_up text, next_run_at timestamp with time zone, db_now timestamp with time zone, job_name text, queue text, unreadable text) LANGUAGE sql -- body sha256 23272749ed31feb3
-- FUNCTION workhorse_schedule_fire_v1(p_name text, p_expected timestamp with time zone, p_slots timestamp with time zone[], p_next timestamp with time zone)
--   RETURNS TABLE(slot_at timestamp with time zone, job_id bigint, inserted boolean) LANGUAGE plpgsql -- body sha256 fb43b48b6396d564
-- FUNCTION workhorse_schedule_set_paused_v1(p_name text, p_paused boolean)
--   RETURNS boolean LANGUAGE sql -- body sha256 d58dbdf1d2c2de95
-- FUNCTION workhorse_schedule_sync_v1(p_schedules jsonb)
--   RETURNS TABLE(name text, action text) LANGUAGE plpgsql -- body sha256 01a0ca7ee4c403eb
-- FUNCTION workhorse_set_queue_limits_v1(p_queue text, p_concurrency integer, p_rate integer, p_period_seconds double precision)
--   RETURNS TABLE(status text, concurrency_limit integer, rate_limit integer, rate_period_seconds double precision) LANGUAGE plpgsql -- body sha256 0a5a404f21601dcb
-- FUNCTION workhorse_set_queue_paused_v1(p_queue text, p_paused boolean)
--   RETURNS TABLE(status text, paused boolean) LANGUAGE plpgsql -- body sha256 cf8d1c2cbd011c76
-- FUNCTION workhorse_settle_dependents_v1(p_job_ids bigint[], p_dependents bigint[])
--   RETURNS integer LANGUAGE plpgsql -- body sha256 e66620dff7a85a05
-- FUNCTION workhorse_sleep_many_v1(p_worker text, p_job_ids bigint[], p_fences bigint[], p_names text[], p_wake_ats timestamp with time zone[], p_delays double precision[])
--   RETURNS TABLE(job_id bigint, ok boolean, run_at timestamp with time zone, canceled boolean) LANGUAGE plpgsql SET enable_seqscan=off -- body sha256 466ed45057adf17e
-- FUNCTION workhorse_succeed_and_claim_v1(p_worker text, p_job_ids bigint[], p_fences bigint[], p_results jsonb[], p_queues text[], p_limits integer[], p_lease_seconds double precision)
--   RETURNS TABLE(job_id bigint, ok boolean, name text, queue text, payload jsonb, attempt integer, max_attempts integer, fence bigint, timeout_seconds double precision, lease_expires_at timestamp with time zone, cancel_requested boolean, trace_context jsonb, waited_seconds double precision, pickup_seconds double precision) LANGUAGE plpgsql SET enable_seqscan=off SET plan_cache_mode=force_generic_plan -- body sha256 13c43d1e315bd26b
-- FUNCTION workhorse_succeed_many_v1(p_worker text, p_job_ids bigint[], p_fences bigint[], p_results jsonb[])
--   RETURNS TABLE(job_id bigint, ok boolean) LANGUAGE plpgsql SET enable_seqscan=off SET plan_cache_mode=force_generic_plan -- body sha256 eb5951d85ddbcade
-- FUNCTION workhorse_vacuum_due_v1(p_quiet_for interval, p_min_dead bigint, p_min_dead_fraction double precision)
--   RETURNS TABLE(table_name text, dead_tuples bigint, live_tuples bigint, due boolean, may_vacuum boolean) LANGUAGE sql -- body sha256 d6a8ecc113ec4a0c
-- FUNCTION workhorse_worker_gone_v1(p_worker text)
--   RETURNS void LANGUAGE sql -- body sha256 b0e4299805dd657a
-- FUNCTION workhorse_worker_key_v1(p_owner text)
--   RETURNS text LANGUAGE sql -- body sha256 e8fb18f56beadcde
