-- Records the success of a worker's finished runs and claims its next jobs,
-- in one call and one transaction: the round trip a worker with one slot
-- makes per job, instead of a finish on one connection and a claim on another
-- (docs/decisions.md, "One slot: the finish rides with the next claim").
--
-- The successes are written first, by workhorse_succeed_many_v1 (fenced: a
-- (job, fence) no longer active under p_worker comes back ok = false and
-- nothing about it changes), so a concurrency-limited queue counts the place
-- they free; then workhorse_claim_many_v1 claims up to p_limits[i] jobs of
-- p_queues[i], with everything that function does (promotion, paused
-- queues, limits), except from a limited queue whose claims were held back
-- (see below). With no ids the call is a plain claim.
--
-- Rows: first one per finished id, in input order, with job_id and ok set and
-- the claim columns NULL; then one per claimed job, ok NULL, in claim order.
--
-- A finish waits for its commit to be flushed, as the writer's do, even on
-- a connection that claims with synchronous_commit off: SET LOCAL restores
-- the server's setting for this transaction only, and only when it ends runs.
CREATE OR REPLACE FUNCTION workhorse_succeed_and_claim_v1(
    p_worker text,
    p_job_ids bigint[],
    p_fences bigint[],
    p_results jsonb[],
    p_queues text[],
    p_limits integer[],
    p_lease_seconds double precision DEFAULT 30
) RETURNS TABLE (
    job_id bigint, ok boolean, name text, queue text, payload jsonb, attempt integer,
    max_attempts integer, fence bigint, timeout_seconds double precision,
    lease_expires_at timestamptz, cancel_requested boolean,
    trace_context jsonb, waited_seconds double precision, pickup_seconds double precision
)
-- Index paths whatever the statistics say, for the life of a session's
-- cached plans (docs/sql.md, "Plans that do not depend on statistics"). A
-- function's SET clause confines SET LOCAL of that one setting only, so the
-- synchronous_commit set below still holds until the commit. PL/pgSQL, not
-- LANGUAGE sql: PostgreSQL caches a PL/pgSQL statement's plan for the
-- session, while a SQL function's body is planned on every call.
--
-- plan_cache_mode: PL/pgSQL plans each statement afresh ("custom plans") as
-- long as the generic plan looks costlier, and with enable_seqscan off it
-- did on every call: with auto, one call spent ~1.6 ms of server time (of
-- it ~0.7 in workhorse_end_runs_v1 and ~0.55 in workhorse_claim_many_v1,
-- re-planning); forced generic, ~0.65 ms (track_functions, 3,000 calls on
-- the 2-core machine, in turns). The setting holds for the functions this
-- one calls. Their generic plans stay on indexes, as enable_seqscan off
-- makes every plan here do (test_plans_from_empty_tables.py).
LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
    v_limits integer[] := p_limits;
    v_waited text[];
BEGIN
    IF coalesce(cardinality(p_job_ids), 0) > 0 THEN
        SET LOCAL synchronous_commit TO DEFAULT;
        -- The finish may clear held_back on its queue's row before the claim
        -- locks the limited queues' rows in name order: two calls (or a call
        -- and another worker's claim) could then lock two queues in opposite
        -- orders and deadlock. So the limited queues this call can touch,
        -- those it claims from and those of the runs it ends, are locked
        -- first, in name order, as every claim does; the claim's own lock of
        -- them later is then a no-op.
        SELECT array_agg(q.name) INTO v_waited
        FROM (
            SELECT wq.name, wq.held_back FROM workhorse_queue wq
            WHERE (wq.concurrency_limit IS NOT NULL OR wq.rate_limit IS NOT NULL)
              AND (wq.name = ANY (p_queues)
                   OR wq.name IN (SELECT rt.queue FROM workhorse_job_runtime rt
                                  WHERE rt.job_id = ANY (p_job_ids)))
            ORDER BY wq.name
            FOR UPDATE OF wq
        ) q
        WHERE q.held_back;
        RETURN QUERY
        SELECT s.job_id, s.ok, NULL::text, NULL::text, NULL::jsonb, NULL::integer,
               NULL::integer, NULL::bigint, NULL::double precision, NULL::timestamptz,
               NULL::boolean, NULL::jsonb, NULL::double precision, NULL::double precision
        FROM workhorse_succeed_many_v1(p_worker, p_job_ids, p_fences, p_results) s;
        IF v_waited IS NOT NULL THEN
            -- A limited queue whose claims were held back has workers
            -- waiting for a place, and the finish above NOTIFYs them: this
            -- call claims nothing of it, or the worker that ends a run would
            -- take every place it frees and starve the others (three workers
            -- sharing a limit of two ran on two). Its own claim of the queue
            -- comes with the others', woken by that NOTIFY or by its idle
            -- lookup (workhorse_next_run_at_v1 reports a held-back queue with
            -- room as due now).
            v_limits := ARRAY(SELECT CASE WHEN u.q = ANY (v_waited) THEN 0 ELSE u.l END
                              FROM unnest(p_queues, p_limits) WITH ORDINALITY AS u(q, l, o)
                              ORDER BY u.o);
        END IF;
    END IF;
    RETURN QUERY
    SELECT c.job_id, NULL::boolean, c.name, c.queue, c.payload, c.attempt, c.max_attempts,
           c.fence, c.timeout_seconds, c.lease_expires_at, c.cancel_requested,
           c.trace_context, c.waited_seconds, c.pickup_seconds
    FROM workhorse_claim_many_v1(p_worker, p_queues, v_limits, p_lease_seconds) c;
END;
$$;
