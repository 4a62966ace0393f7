DROP TABLE IF EXISTS workhorse_job_checkpoint, workhorse_schema, workhorse_queue,
    workhorse_attempt_history, workhorse_job_event, workhorse_job_query, workhorse_job_outcome,
    workhorse_job_dependency,
    workhorse_job_runtime, workhorse_job CASCADE;
DROP SEQUENCE IF EXISTS workhorse_attempt_history_id_seq, workhorse_job_event_id_seq,
    workhorse_job_life_seq;
DROP DOMAIN IF EXISTS workhorse_job_name, workhorse_queue_name, workhorse_payload,
    workhorse_max_attempts, workhorse_priority, workhorse_timeout, workhorse_max_stalled,
    workhorse_idempotency_key, workhorse_dependency_policy, workhorse_live_state,
    workhorse_run_at, workhorse_attempt_count, workhorse_stall_count, workhorse_pending_count,
    workhorse_outcome_state, workhorse_event_kind, workhorse_attempt_outcome,
    workhorse_checkpoint_name, workhorse_checkpoint_kind, workhorse_backoff;
