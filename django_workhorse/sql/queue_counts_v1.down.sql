DROP TABLE IF EXISTS workhorse_failure_hour;
DROP TABLE IF EXISTS workhorse_queue_minute;
