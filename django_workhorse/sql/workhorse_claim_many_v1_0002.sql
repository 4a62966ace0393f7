-- Re-created by migration 0002 (docs/releasing.md): the same arguments,
-- result and meaning as workhorse_claim_many_v1.sql, two changes of body.
-- * A lease runs from the moment it is granted, clock_timestamp(), not from
--   the start of the transaction (now()): a claim that waited on a lock
--   (an operator's, a migration's) committed leases that had already run
--   out, and the next stall sweep took the jobs from their running handlers.
-- * A limited queue's row is locked FOR UPDATE SKIP LOCKED: a claim that
--   finds it held (by another claim, an operator, a finish) takes nothing of
--   that queue this time instead of waiting, so claims never queue behind
--   one another and a lock on one queue's row delays that queue only. Only
--   the holder of the row counts and claims, so the limits stay exact. A
--   worker that skipped a queue tries it again at its next claim (a slot
--   frees, a wake-up of the queue) or at its next poll.
--
-- Hands ready jobs to a worker: up to p_limits[i] jobs of queue p_queues[i],
-- best first (higher priority, then earlier run_at, then enqueue order).
-- Queue limits (concurrency, rate; see workhorse_set_queue_limits_v1) lower
-- p_limits[i] further, for every worker alike. Due scheduled jobs of those
-- queues are promoted to ready in the same call (up to 1,000 a queue),
-- whatever room the limits leave (a promotion starts nothing), so no separate sweep is
-- needed for a job to become claimable and a full queue does not keep due
-- jobs scheduled (workhorse_next_run_at_v1 would report them due, and its
-- idle workers claim again at once). Paused queues
-- hand out nothing. Each claimed job gets the worker as owner, a lease of
-- p_lease_seconds on the database clock and a fence one higher than before:
-- every later write of this run must present (worker, fence).
--
-- SKIP LOCKED lets any number of workers claim at once without waiting on
-- each other; the LATERAL per queue keeps each probe on the ready index with
-- its own LIMIT instead of sorting all ready rows of all queues. The rows
-- are locked FOR NO KEY UPDATE, the lock the UPDATE takes anyway (no key
-- column changes), not FOR UPDATE: a transaction enqueueing a dependent holds
-- its prerequisite FOR KEY SHARE until it commits, which FOR UPDATE conflicts
-- with. SKIP LOCKED then skipped the prerequisite, and the dependent's commit
-- wakes no worker (it is blocked): a ready job waited for the next poll.
--
-- Each row also says what tracing and metrics need about the job, so that
-- switching them on changes no SQL a worker calls: the producer's trace
-- context, and, in seconds on the database clock from the attempt's start,
-- how long after its enqueue (waited_seconds) and after it was due
-- (pickup_seconds, from run_at, which the claim does not move) it was
-- claimed. They come from the row probes the claim makes anyway; a worker
-- with both off does not read them.
CREATE OR REPLACE FUNCTION workhorse_claim_many_v1(
    p_worker text,
    p_queues text[],
    p_limits integer[],
    p_lease_seconds double precision DEFAULT 30
) RETURNS TABLE (
    job_id bigint, name text, queue text, payload jsonb, attempt integer,
    max_attempts integer, fence bigint, timeout_seconds double precision,
    lease_expires_at timestamptz, cancel_requested boolean,
    trace_context jsonb, waited_seconds double precision, pickup_seconds double precision
)
-- Index paths whatever the statistics say, for the life of a session's
-- cached plans (docs/sql.md, "Plans that do not depend on statistics").
-- Generic plans, made once per session: with auto, PL/pgSQL planned these
-- statements afresh on every call, as the generic plan never looked cheaper
-- with enable_seqscan off (one-job claim + succeed: ~0.9 ms of server time
-- against ~0.35 forced generic; 100 at a time: ~50 against ~35 us a job).
LANGUAGE plpgsql SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_queues text[];
    v_limits integer[];
    v_promote integer[];
    v_ids    bigint[];
    v_q      record;
    v_i      integer;
    v_allowed integer;
    v_room   integer;
    v_rated  boolean := false;
    v_now    timestamptz;
    v_stamps timestamptz[];
    v_want   integer[];
BEGIN
    IF p_worker IS NULL OR p_worker = '' THEN
        RAISE EXCEPTION 'workhorse_claim_many_v1 needs a worker id' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- 0 hands out leases that have expired already (recovery's tests use
    -- it); the upper bound is the settings' longest duration, 100 years.
    IF NOT p_lease_seconds BETWEEN 0 AND 3155760000 OR p_lease_seconds IS NULL THEN
        RAISE EXCEPTION 'workhorse_claim_many_v1: p_lease_seconds must be from 0 to 3155760000, got %',
            p_lease_seconds USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(p_queues) IS DISTINCT FROM cardinality(p_limits) THEN
        RAISE EXCEPTION 'workhorse_claim_many_v1: % queues but % limits',
            cardinality(p_queues), cardinality(p_limits) USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT array_agg(u.q), array_agg(u.l) INTO v_queues, v_limits
    FROM unnest(p_queues, p_limits) AS u(q, l)
    WHERE u.l > 0
      AND NOT EXISTS (SELECT 1 FROM workhorse_queue wq WHERE wq.name = u.q AND wq.paused);
    IF v_queues IS NULL THEN
        RETURN;
    END IF;

    -- Queue limits (the per-member queue-policy transition). A queue without
    -- limits pays this one probe of the small workhorse_queue table and
    -- nothing else: every statement below it is the unlimited path's.
    IF EXISTS (
        SELECT 1 FROM workhorse_queue wq
        WHERE wq.name = ANY (v_queues)
          AND (wq.concurrency_limit IS NOT NULL OR wq.rate_limit IS NOT NULL)
    ) THEN
        -- FOR UPDATE SKIP LOCKED on the limited queues' rows: of two
        -- workers claiming the same limited queue at once, one counts and
        -- claims and the other skips that queue this time; a later claim's
        -- count (a new snapshot per statement under READ COMMITTED) sees
        -- the jobs the first one claimed and committed. Without the lock both
        -- would count the same active jobs and together exceed the limit.
        -- Claims of unlimited queues never take this lock.
        v_stamps := array_fill(NULL::timestamptz, ARRAY[cardinality(v_queues)]);
        -- Every limited queue starts at nothing; the loop gives each queue
        -- whose row it holds what its limits leave. A row held elsewhere is
        -- skipped, and its queue hands out nothing in this claim.
        v_want := v_limits;
        SELECT array_agg(CASE WHEN wq.name IS NULL THEN u.l ELSE 0 END ORDER BY u.o)
        INTO v_limits
        FROM unnest(v_queues, v_limits) WITH ORDINALITY AS u(q, l, o)
        LEFT JOIN workhorse_queue wq
               ON wq.name = u.q
              AND (wq.concurrency_limit IS NOT NULL OR wq.rate_limit IS NOT NULL);
        FOR v_q IN
            SELECT wq.name, wq.concurrency_limit, wq.rate_limit, wq.rate_period, wq.rate_starts,
                   wq.rate_counts, wq.held_back
            FROM workhorse_queue wq
            WHERE wq.name = ANY (v_queues)
              AND (wq.concurrency_limit IS NOT NULL OR wq.rate_limit IS NOT NULL)
            ORDER BY wq.name
            FOR UPDATE SKIP LOCKED
        LOOP
            v_i := array_position(v_queues, v_q.name);
            v_allowed := v_want[v_i];
            IF v_q.concurrency_limit IS NOT NULL THEN
                -- Active jobs come from the runtime rows, so a job taken
                -- back by stall recovery frees its place by itself.
                SELECT v_q.concurrency_limit - count(*) INTO v_room
                FROM workhorse_job_runtime rt
                WHERE rt.state = 'active' AND rt.queue = v_q.name;
                IF v_room < v_allowed AND NOT v_q.held_back THEN
                    -- This claim wants more than the limit leaves: the next
                    -- finish of the queue must wake its workers. Under the
                    -- row lock taken above, committed with the claim.
                    UPDATE workhorse_queue wq SET held_back = true WHERE wq.name = v_q.name;
                END IF;
                v_allowed := least(v_allowed, v_room);
            END IF;
            IF v_q.rate_limit IS NOT NULL THEN
                -- A claim is counted, and recorded, at the clock time it
                -- holds the queue's row, not at now() (its transaction's
                -- start): the row lock orders the claims of a queue, so the
                -- recorded times rise in the order the claims commit, and
                -- each claim counted every start recorded in the period
                -- before its own. With now(), a claim that waited for the
                -- lock longer than the period was recorded too early; the
                -- next claim no longer counted it (or had trimmed it) and
                -- together they exceeded the rate (measured with 24 worker
                -- processes on one limited queue).
                v_now := clock_timestamp();
                v_stamps[v_i] := v_now;
                SELECT v_q.rate_limit - coalesce(sum(t.n), 0) INTO v_room
                FROM unnest(v_q.rate_starts, v_q.rate_counts) AS t(at, n)
                WHERE t.at > v_now - v_q.rate_period;
                v_allowed := least(v_allowed, v_room);
                v_rated := true;
            END IF;
            v_limits[v_i] := greatest(v_allowed, 0);
        END LOOP;
    END IF;

    -- Promotion is a write; most claims find nothing due, so probe the
    -- scheduled index first and skip the UPDATE/INSERT statement entirely.
    IF EXISTS (
        SELECT 1 FROM unnest(v_queues) AS u(q)
        WHERE EXISTS (SELECT 1 FROM workhorse_job_runtime rt
                      WHERE rt.state = 'scheduled' AND rt.queue = u.q AND rt.run_at <= now())
    ) THEN
    -- Every due job of the queue is promoted, not only as many as the claim
    -- takes: the pick below then chooses among all of them by priority. With
    -- the claim's size as the bound, a claim of one promoted the due job with
    -- the earliest run_at and handed it out, ahead of a due job of higher
    -- priority that came due a moment later. At most 1,000 per queue and
    -- claim, earliest first, so that one claim's work stays bounded when a
    -- large batch comes due at once (a burst of more than 1,000 is ordered by
    -- priority 1,000 jobs at a time).
    -- The bound travels as a column of the unnest, as the claim's size did:
    -- a constant LIMIT let the planner prefer a bitmap scan of every due row
    -- and a sort to the scheduled index's order.
    v_promote := array_fill(1000, ARRAY[cardinality(v_queues)]);
    WITH due AS (
        SELECT s.job_id
        FROM unnest(v_queues, v_promote) AS u(q, l)
        CROSS JOIN LATERAL (
            SELECT rt.job_id FROM workhorse_job_runtime rt
            WHERE rt.state = 'scheduled' AND rt.queue = u.q AND rt.run_at <= now()
            ORDER BY rt.run_at
            LIMIT u.l
            FOR NO KEY UPDATE SKIP LOCKED
        ) s
    ),
    promoted AS (
        UPDATE workhorse_job_runtime rt SET state = 'ready'
        FROM due WHERE rt.job_id = due.job_id
        RETURNING rt.job_id, rt.attempt
    )
    INSERT INTO workhorse_job_event (job_id, kind, attempt)
    SELECT p.job_id, 'promoted', p.attempt FROM promoted p;
    END IF;

    -- The picked ids go through an array, not a CTE joined back to the
    -- runtime table: the planner cannot know how many rows LIMIT u.l yields,
    -- guessed thousands, and hashed a sequential scan of runtime and of job
    -- on every claim (6 of 7 ms for 100 jobs out of 20,000 waiting). An
    -- ANY(array) probe stays on the primary keys whatever the statistics say.
    SELECT array_agg(r.job_id) INTO v_ids
    FROM unnest(v_queues, v_limits) AS u(q, l)
    CROSS JOIN LATERAL (
        SELECT rt.job_id FROM workhorse_job_runtime rt
        WHERE rt.state = 'ready' AND rt.queue = u.q
        ORDER BY rt.priority DESC, rt.run_at, rt.job_id
        LIMIT u.l
        FOR NO KEY UPDATE SKIP LOCKED
    ) r;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;

    IF v_rated THEN
        -- The durable record of these starts, pruned to the current window:
        -- one entry for the whole claim (its time and its count), not one
        -- per job, so a busy window of a high rate is a short array
        -- (rewriting 1,000 timestamps per claim cost a tenth of the drain).
        UPDATE workhorse_queue wq
        SET rate_starts = ARRAY(SELECT t.at FROM unnest(wq.rate_starts, wq.rate_counts)
                                         WITH ORDINALITY AS t(at, n, o)
                                WHERE t.at > st.at - wq.rate_period ORDER BY t.o)
                          || st.at,
            rate_counts = ARRAY(SELECT t.n FROM unnest(wq.rate_starts, wq.rate_counts)
                                         WITH ORDINALITY AS t(at, n, o)
                                WHERE t.at > st.at - wq.rate_period ORDER BY t.o)
                          || c.n
        FROM (SELECT rt.queue, count(*)::integer AS n FROM workhorse_job_runtime rt
              WHERE rt.job_id = ANY (v_ids) GROUP BY rt.queue) c,
             unnest(v_queues, v_stamps) AS st(q, at)
        WHERE wq.name = c.queue AND st.q = c.queue AND wq.rate_limit IS NOT NULL;
    END IF;

    RETURN QUERY
    WITH claimed AS (
        UPDATE workhorse_job_runtime rt
        SET state = 'active',
            attempt = rt.attempt + 1,
            worker_id = p_worker,
            fence = rt.fence + 1,
            lease_expires_at = clock_timestamp() + make_interval(secs => p_lease_seconds),
            -- A rate-limited queue's start is the time its claim was
            -- counted and recorded under the queue's row lock (above), so
            -- attempt_history shows the same starts the limit counted.
            attempt_started_at = CASE WHEN v_rated
                                      THEN coalesce(v_stamps[array_position(v_queues, rt.queue::text)], now())
                                      ELSE now() END
        WHERE rt.job_id = ANY (v_ids)
        RETURNING rt.job_id, rt.priority, rt.run_at, rt.attempt, rt.fence,
                  rt.lease_expires_at, rt.cancel_requested, rt.attempt_started_at
    )
    -- No 'claimed' event is written: the claim is the attempt's start, which
    -- the runtime row holds while it runs and attempt_history once it ends;
    -- workhorse_job_timeline_v1 shows it from there (docs/decisions.md).
    -- Columns of a domain type (tables_v1.sql) are cast to the declared base
    -- type: RETURN QUERY wants the types exactly.
    SELECT c.job_id, j.name::text, j.queue::text, j.payload::jsonb, c.attempt::integer,
           j.max_attempts::integer, c.fence,
           extract(epoch FROM j.timeout)::double precision, c.lease_expires_at, c.cancel_requested,
           j.trace_context::jsonb,
           extract(epoch FROM c.attempt_started_at - j.created_at)::double precision,
           extract(epoch FROM c.attempt_started_at - c.run_at)::double precision
    FROM claimed c
    -- One primary-key probe per claimed job. As a plain join the planner
    -- hashes a sequential scan of workhorse_job until it holds ~25,000 rows
    -- (3.5 ms at 20,000 against 0.1 ms of probes); OFFSET 0 keeps the
    -- subquery parameterized by c.job_id.
    CROSS JOIN LATERAL (
        SELECT j.name, j.queue, j.payload, j.max_attempts, j.timeout, j.trace_context,
               j.created_at
        FROM workhorse_job j WHERE j.id = c.job_id OFFSET 0
    ) j
    ORDER BY c.priority DESC, c.run_at, c.job_id;
END;
$$;
