-- The key that names a worker's liveness proof (workhorse_pulse_v1): the
-- first 16 hex digits of the md5 of its worker id, without the "+<n>" that
-- the owner names of its later claim connections add (worker/claims.py), so
-- that a job's owner (workhorse_job_runtime.worker_id) leads to its worker's
-- proof. Sixteen digits fit any worker id into PostgreSQL's 63 bytes of
-- application name; two workers alive at once share a key with odds of one
-- in 2^64 per pair.
CREATE OR REPLACE FUNCTION workhorse_worker_key_v1(p_owner text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT left(md5(regexp_replace(p_owner, '\+[0-9]+$', '')), 16)
$$;
