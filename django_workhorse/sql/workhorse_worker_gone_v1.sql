-- A worker that stops says so: its row goes.
CREATE OR REPLACE FUNCTION workhorse_worker_gone_v1(p_worker text) RETURNS void
LANGUAGE sql AS $$
    DELETE FROM workhorse_worker w WHERE w.worker_id = p_worker;
$$;
