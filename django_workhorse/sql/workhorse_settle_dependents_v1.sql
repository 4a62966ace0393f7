-- The one home of the blocked → ready / scheduled / canceled transition.
--
-- p_job_ids are jobs that have just ended (their outcome rows are written,
-- earlier in the caller's transaction); every function that ends a job
-- calls this once, with exactly the ids it ended:
--     PERFORM workhorse_settle_dependents_v1(<ids that just ended>);
-- Each blocked dependent of those jobs counts them off its
-- pending_dependencies and settles by its dependency_policy:
--   all_succeeded  released once every prerequisite succeeded; canceled as
--                  soon as one failed or was canceled;
--   all_finished   released once every prerequisite ended, however;
--   any_succeeded  released as soon as one succeeded; canceled once all
--                  ended without a success.
-- Released means ready, or scheduled while its run_at is in the future; a
-- 'unblocked' event records it and the queue is notified as enqueue does.
-- Canceled means a 'canceled' outcome whose envelope names the prerequisite
-- and its state; a canceled dependent has just ended too, so its own
-- dependents are settled in the next round, and so on down the graph.
--
-- p_dependents limits the first round to those dependents: enqueue passes
-- its new jobs with their prerequisites that had already ended, so that a
-- prerequisite that finished before the dependent existed counts at once.
--
-- Concurrency: every blocked job the cascade can reach is locked (FOR
-- UPDATE) in job_id order, in one statement of its own before the first
-- round; the counts are read and written by later statements, whose
-- snapshots see every commit made before our locks were granted. Two transactions ending the last two prerequisites of one
-- dependent therefore take turns on its row, and only the second sees the
-- count reach zero: it is released once. A prerequisite's id is always
-- lower than its dependents' (they can only name jobs that exist), so a
-- finish locks its own rows and then higher ids, never the other way.
--
-- Returns how many dependents were released or canceled, all rounds together.
CREATE OR REPLACE FUNCTION workhorse_settle_dependents_v1(
    p_job_ids bigint[],
    p_dependents bigint[] DEFAULT NULL
) RETURNS integer
LANGUAGE plpgsql AS $$
-- PL/pgSQL, not LANGUAGE sql: PostgreSQL caches a PL/pgSQL statement's plan
-- for the session, while a SQL function's body is planned on every call.
#variable_conflict use_column
DECLARE
    v_ended    bigint[] := p_job_ids;
    v_only     bigint[] := p_dependents;
    v_held     bigint[];
    v_deps     bigint[];
    v_counts   integer[];
    v_goods    integer[];
    v_good_ids bigint[];
    v_bad_ids  bigint[];
    v_canceled bigint[];
    v_errors   jsonb[];
    v_data     jsonb[];
    v_n        integer;
    v_settled  integer;
    v_total    integer := 0;
BEGIN
    LOOP
        -- The whole cost to a job nobody waits for: one probe of the
        -- edges' primary key per id, all of them missing (about 10 us for
        -- 100 ids). The finishing functions that call this one run with
        -- enable_seqscan = off, which it inherits; for other callers the
        -- n_distinct of prerequisite_id is fixed (tables_v1.sql). Every read of the
        -- edges by prerequisite is such a LATERAL probe (docs/sql.md): with
        -- `prerequisite_id = ANY (ids)` the planner scans the whole edge
        -- table once it holds a few thousand rows, and a probe must not sit
        -- inside a join whose other side it does not depend on (a fan-out
        -- took 28 s so, each of 10,000 dependents scanning all edges).
        IF coalesce(cardinality(v_ended), 0) = 0 OR NOT EXISTS (
            SELECT 1 FROM unnest(v_ended) AS u(id)
            CROSS JOIN LATERAL (
                SELECT 1 FROM workhorse_job_dependency d WHERE d.prerequisite_id = u.id LIMIT 1
            ) x
        ) THEN
            RETURN v_total;
        END IF;

        -- Per dependent: how many of its prerequisites ended in this round,
        -- how many of those succeeded, and the first (lowest id) that
        -- succeeded and that did not, to name in the records. These only
        -- depend on rows this transaction wrote, so they are read before
        -- the locks; each edge read is driven by an ended id alone (a
        -- fan-out reads its 10,000 edges once).
        SELECT array_agg(h.job_id ORDER BY h.job_id), array_agg(h.ended ORDER BY h.job_id),
               array_agg(h.succeeded ORDER BY h.job_id), array_agg(h.good_id ORDER BY h.job_id),
               array_agg(h.bad_id ORDER BY h.job_id)
        INTO v_deps, v_counts, v_goods, v_good_ids, v_bad_ids
        FROM (
            SELECT x.job_id, count(*)::integer AS ended,
                   count(*) FILTER (WHERE o.state = 'succeeded')::integer AS succeeded,
                   min(u.id) FILTER (WHERE o.state = 'succeeded') AS good_id,
                   min(u.id) FILTER (WHERE o.state <> 'succeeded') AS bad_id
            FROM unnest(v_ended) AS u(id)
            CROSS JOIN LATERAL (
                SELECT d.job_id FROM workhorse_job_dependency d
                WHERE d.prerequisite_id = u.id OFFSET 0
            ) x
            CROSS JOIN LATERAL (
                SELECT oo.state FROM workhorse_job_outcome oo WHERE oo.job_id = u.id OFFSET 0
            ) o
            WHERE v_only IS NULL OR x.job_id IN (SELECT n.id FROM unnest(v_only) AS n(id))
            GROUP BY x.job_id
        ) h;

        -- A state test beside a probe by key is written `(state = ...) IS TRUE`
        -- wherever it appears here: that form does not match the predicate of
        -- a partial index (docs/sql.md, "Plans that do not depend on
        -- statistics"). As `state = 'blocked'` it let a plan made on empty
        -- tables read all of workhorse_runtime_blocked for every dependent.
        --
        -- The first round locks every blocked job the whole cascade can
        -- reach, in one job_id-ordered statement, before it settles any.
        -- Locking one generation at a time let a later generation ask for
        -- lower ids than an earlier one held: two cascades crossing (job 8
        -- then 7 against 7 then 8) deadlocked. The reach follows the edges
        -- from the ended jobs: their blocked dependents, and on from those
        -- that may end canceled (reached through a job that did not
        -- succeed, with a policy other than all_finished); a success, the
        -- common case, reaches its direct dependents only. It is bounded:
        -- ids grow along every edge (no cycles), only blocked jobs extend
        -- it, and UNION visits each (job, may-cancel) pair once. Each read
        -- is a LATERAL probe (docs/sql.md).
        IF v_held IS NULL THEN
            v_held := ARRAY(
                SELECT rt.job_id FROM workhorse_job_runtime rt
                WHERE rt.job_id = ANY (ARRAY(
                    WITH RECURSIVE reach (job_id, root, bad) AS (
                        SELECT u.id, true, coalesce(o.state <> 'succeeded', true)
                        FROM unnest(v_ended) AS u(id)
                        LEFT JOIN LATERAL (
                            SELECT oo.state FROM workhorse_job_outcome oo
                            WHERE oo.job_id = u.id OFFSET 0
                        ) o ON true
                      UNION
                        SELECT x.job_id, false, r.bad AND j.policy <> 'all_finished'
                        FROM reach r
                        CROSS JOIN LATERAL (
                            SELECT d.job_id FROM workhorse_job_dependency d
                            WHERE d.prerequisite_id = r.job_id OFFSET 0
                        ) x
                        CROSS JOIN LATERAL (
                            SELECT 1 FROM workhorse_job_runtime b
                            WHERE b.job_id = x.job_id AND (b.state = 'blocked') IS TRUE OFFSET 0
                        ) b
                        CROSS JOIN LATERAL (
                            SELECT coalesce(jb.dependency_policy, 'all_succeeded') AS policy
                            FROM workhorse_job jb WHERE jb.id = x.job_id OFFSET 0
                        ) j
                        WHERE (r.root OR r.bad)
                          AND (NOT r.root OR v_only IS NULL
                               OR x.job_id IN (SELECT n.id FROM unnest(v_only) AS n(id)))
                    )
                    SELECT DISTINCT r.job_id FROM reach r WHERE NOT r.root))
                  AND (rt.state = 'blocked') IS TRUE
                ORDER BY rt.job_id
                FOR UPDATE);
        END IF;
        -- A dependent the reach could not foresee (an edge committed after
        -- it was read: an enqueue naming a job this cascade cancels) is
        -- locked in its round, as before; it is rare, and a deadlock it
        -- could meet is detected and its transaction retried.
        PERFORM 1 FROM workhorse_job_runtime rt
        WHERE rt.job_id = ANY (ARRAY(SELECT unnest(v_deps) EXCEPT SELECT unnest(v_held)))
          AND (rt.state = 'blocked') IS TRUE
        ORDER BY rt.job_id
        FOR UPDATE;

        WITH hit AS (
            SELECT * FROM unnest(v_deps, v_counts, v_goods, v_good_ids, v_bad_ids)
                AS h(job_id, ended, succeeded, good_id, bad_id)
        ),
        judged AS (
            -- Reads of the dependent's rows are LATERAL probes (docs/sql.md):
            -- a fan-out releases thousands at once.
            SELECT h.job_id, h.good_id, h.bad_id, r.queue, r.run_at, r.attempt,
                   r.stall_count, j.policy,
                   greatest(r.pending_dependencies - h.ended, 0) AS pending,
                   CASE j.policy
                       WHEN 'any_succeeded' THEN
                           CASE WHEN h.succeeded > 0 THEN 'release'
                                WHEN r.pending_dependencies - h.ended <= 0 THEN 'cancel'
                                ELSE 'wait' END
                       WHEN 'all_finished' THEN
                           CASE WHEN r.pending_dependencies - h.ended <= 0 THEN 'release'
                                ELSE 'wait' END
                       ELSE
                           CASE WHEN h.succeeded < h.ended THEN 'cancel'
                                WHEN r.pending_dependencies - h.ended <= 0 THEN 'release'
                                ELSE 'wait' END
                   END AS verdict
            FROM hit h
            -- Blocked rows only: exactly those locked above (nothing else
            -- becomes blocked), read as last committed.
            CROSS JOIN LATERAL (
                SELECT rt.queue, rt.run_at, rt.attempt, rt.stall_count, rt.pending_dependencies
                FROM workhorse_job_runtime rt
                WHERE rt.job_id = h.job_id AND (rt.state = 'blocked') IS TRUE OFFSET 0
            ) r
            CROSS JOIN LATERAL (
                SELECT coalesce(jb.dependency_policy, 'all_succeeded') AS policy
                FROM workhorse_job jb WHERE jb.id = h.job_id OFFSET 0
            ) j
        ),
        decided AS (
            -- The prerequisite a record names: for a cancel the first that
            -- did not succeed, for a release the first that did (or any).
            SELECT g.*, CASE WHEN g.verdict = 'cancel' THEN g.bad_id
                             ELSE coalesce(g.good_id, g.bad_id) END AS cause_id,
                   c.state AS cause_state
            FROM judged g
            CROSS JOIN LATERAL (
                SELECT o.state FROM workhorse_job_outcome o
                WHERE o.job_id = CASE WHEN g.verdict = 'cancel' THEN g.bad_id
                                      ELSE coalesce(g.good_id, g.bad_id) END
                OFFSET 0
            ) c
        ),
        counted AS (
            UPDATE workhorse_job_runtime rt SET pending_dependencies = d.pending
            FROM decided d
            WHERE rt.job_id = d.job_id AND d.verdict = 'wait'
        ),
        released AS (
            -- Eligible from now: a released job queues behind the jobs that
            -- were ready before it, as an enqueue now would.
            UPDATE workhorse_job_runtime rt
            SET state = CASE WHEN rt.run_at > now() THEN 'scheduled' ELSE 'ready' END,
                run_at = greatest(rt.run_at, now()),
                pending_dependencies = d.pending
            FROM decided d
            WHERE rt.job_id = d.job_id AND d.verdict = 'release'
            RETURNING rt.job_id, rt.queue, rt.state, rt.run_at, d.cause_id, d.cause_state
        ),
        evented AS (
            INSERT INTO workhorse_job_event (job_id, kind, attempt, data)
            SELECT d.job_id, 'unblocked', d.attempt,
                   jsonb_build_object('prerequisite', d.cause_id,
                                      'prerequisite_state', d.cause_state,
                                      'state', CASE WHEN d.run_at > now() THEN 'scheduled'
                                                    ELSE 'ready' END,
                                      'run_at', greatest(d.run_at, now()))
            FROM decided d WHERE d.verdict = 'release'
        ),
        woken AS (
            -- As enqueue: ready work wakes takers now, scheduled work tells
            -- them when to look again (epoch seconds).
            SELECT pg_notify('workhorse:' || r.queue,
                             CASE WHEN bool_or(r.state = 'ready') THEN ''
                                  ELSE extract(epoch FROM min(r.run_at))::text END)
            FROM released r GROUP BY r.queue
        ),
        -- The canceled ones, in job_id order, for workhorse_end_runs_v1.
        canceled AS (SELECT * FROM decided d WHERE d.verdict = 'cancel')
        SELECT (SELECT count(*) FROM decided d WHERE d.verdict <> 'wait'),
               array_agg(c.job_id ORDER BY c.job_id),
               array_agg(jsonb_build_object(
                   'type', 'django_workhorse.exceptions.JobCancelled',
                   'message', CASE c.policy
                       WHEN 'any_succeeded' THEN format(
                           'none of its prerequisites succeeded (dependency_policy '
                           'any_succeeded); one of them, job #%s, ended %s',
                           c.cause_id, c.cause_state)
                       ELSE format(
                           'prerequisite job #%s %s (dependency_policy all_succeeded)',
                           c.cause_id,
                           CASE c.cause_state WHEN 'canceled' THEN 'was canceled'
                                              ELSE c.cause_state END)
                   END,
                   'reason', 'dependency',
                   'prerequisite', c.cause_id,
                   'prerequisite_state', c.cause_state,
                   'dependency_policy', c.policy,
                   'state_before', 'blocked') ORDER BY c.job_id),
               array_agg(jsonb_build_object('prerequisite', c.cause_id,
                                            'prerequisite_state', c.cause_state,
                                            'state_before', 'blocked', 'reason', 'dependency')
                         ORDER BY c.job_id),
               (SELECT count(*) FROM woken)
        INTO v_settled, v_canceled, v_errors, v_data, v_n
        FROM canceled c;

        -- A canceled dependent ends like any job (workhorse_end_runs_v1),
        -- without an attempt to close; its own dependents are the next
        -- round of this loop rather than a call of this function from there.
        v_n := coalesce(cardinality(v_canceled), 0);
        IF v_n > 0 THEN
            PERFORM workhorse_end_runs_v1(
                v_canceled, NULL, NULL, array_fill('canceled'::text, ARRAY[v_n]), NULL, v_errors,
                NULL, NULL, v_data, false);
        END IF;

        v_total := v_total + v_settled;
        -- The canceled dependents have ended: their own dependents next.
        v_ended := v_canceled;
        v_only := NULL;
    END LOOP;
END;
$$;
