DROP TABLE IF EXISTS workhorse_worker;
