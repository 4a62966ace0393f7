DROP TABLE IF EXISTS workhorse_schedule;
