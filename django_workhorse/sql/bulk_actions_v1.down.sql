DROP TABLE IF EXISTS workhorse_bulk_action;
