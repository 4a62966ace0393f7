-- A worker's proof that it is alive, sent every half of its lease on its
-- direct connection to PostgreSQL (the one it LISTENs on, never a pooled
-- one): the connection's application_name becomes
--     workhorse-listener <alive until, epoch milliseconds> <worker key>
-- where the worker key is workhorse_worker_key_v1(p_worker). It returns the
-- time until which the worker counts as alive: p_seconds from now on the
-- database clock (clock_timestamp(), the moment of the pulse).
--
-- Why the application name: it is what every session of the server may read
-- of every other (pg_stat_activity shows it to any role, where the times of
-- another role's session need pg_read_all_stats), and setting it reads and
-- locks no table. So no lock held by anyone (an application's transaction,
-- an operator, a migration's ACCESS EXCLUSIVE on any of our tables) and no
-- pooler can delay a pulse, and PostgreSQL itself removes the proof when the
-- session ends. workhorse_recover_stalled_v1 takes no job of a worker whose
-- proof is current (workhorse_live_workers_v1), however late its leases;
-- a process that is frozen (SIGSTOP, a paused VM) or has lost its
-- connection stops pulsing, and its jobs are taken once both its lease and
-- its proof have run out (docs/worker.md#liveness).
--
-- It also says whether this worker leads the fleet's sweeps (leads): the
-- live worker with the smallest key does the work one worker does for all
-- (stall recovery, the schedule sweep, the vacuum turn), so that an idle
-- fleet of a thousand workers costs the database one sweep, not a thousand.
-- A leader that dies hands over at once (its session and proof go); one
-- that freezes, once its proof runs out.
CREATE OR REPLACE FUNCTION workhorse_pulse_v1(p_worker text, p_seconds double precision)
RETURNS TABLE (alive_until timestamptz, leads boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_until timestamptz;
    v_key   text := workhorse_worker_key_v1(p_worker);
BEGIN
    IF p_worker IS NULL OR p_worker = '' THEN
        RAISE EXCEPTION 'workhorse_pulse_v1 needs a worker id' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT p_seconds BETWEEN 0 AND 3155760000 OR p_seconds IS NULL THEN
        RAISE EXCEPTION 'workhorse_pulse_v1: p_seconds must be from 0 to 3155760000, got %',
            p_seconds USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_until := clock_timestamp() + make_interval(secs => p_seconds);
    PERFORM set_config(
        'application_name',
        format('workhorse-listener %s %s', floor(extract(epoch FROM v_until) * 1000)::bigint,
               v_key),
        false);
    RETURN QUERY SELECT v_until, v_key <= ALL (workhorse_live_workers_v1());
END;
$$;
