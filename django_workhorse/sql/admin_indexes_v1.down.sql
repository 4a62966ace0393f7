DROP INDEX IF EXISTS workhorse_outcome_error_type;
DROP INDEX IF EXISTS workhorse_runtime_blocked;
DROP INDEX IF EXISTS workhorse_outcome_finished_brin;
DROP INDEX IF EXISTS workhorse_outcome_unsuccessful;
