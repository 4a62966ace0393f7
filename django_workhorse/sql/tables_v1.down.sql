DROP TABLE IF EXISTS workhorse_job_checkpoint, workhorse_schema, workhorse_queue,
    workhorse_attempt_history, workhorse_job_event, workhorse_job_query, workhorse_job_outcome,
    workhorse_job_dependency,
    workhorse_job_runtime, workhorse_job CASCADE;
DROP SEQUENCE IF EXISTS workhorse_attempt_history_id_seq, workhorse_job_event_id_seq,
    workhorse_job_life_seq;
