-- Accepts many jobs in one call. p_jobs is a JSON array of objects:
--   name, queue, payload (object)          required
--   max_attempts, priority, timeout (s), backoff, max_stalled,
--   idempotency_key, trace_context         optional
--   run_at (timestamp) or delay (s)        optional; the database clock decides
--   depends_on (array of job ids),         optional; the job waits 'blocked'
--   dependency_policy                      until they settle it (see
--                                          workhorse_settle_dependents_v1)
-- A prerequisite must exist: an unknown id is refused (foreign_key_violation)
-- and nothing is written. Prerequisites that are still live are locked
-- (FOR KEY SHARE) until the caller commits, so none can end unseen between
-- this check and the commit; one that has already ended counts at once.
-- Returns one row per input element, in input order: the job id and whether a
-- new job was inserted (false: an existing job holds the idempotency key).
-- Runs inside the caller's transaction: a rollback removes every row, and the
-- wake-up NOTIFY is only delivered on commit.
CREATE OR REPLACE FUNCTION workhorse_enqueue_many_v1(p_jobs jsonb)
RETURNS TABLE (job_id bigint, inserted boolean)
-- Index paths whatever the statistics say, for the life of a session's
-- cached plans (docs/sql.md, "Plans that do not depend on statistics").
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    v_ids      bigint[];
    v_inserted boolean[];
    v_missing  integer;
    v_bad      record;
    v_prereqs  bigint[];
    v_live     bigint[];
    v_new      bigint[];
    v_done     bigint[];
    v_out_of_range constant text :=
        '(@.delay.type() == "string" || @.delay < 0 || @.delay > 3155760000'
        ' || @.timeout.type() == "string" || @.timeout < 0.000001 || @.timeout > 3155760000)';
    v_known_keys constant text[] := ARRAY[
        'name', 'queue', 'payload', 'max_attempts', 'priority', 'timeout', 'backoff',
        'max_stalled', 'idempotency_key', 'trace_context', 'run_at', 'delay', 'depends_on',
        'dependency_policy'];
BEGIN
    IF jsonb_typeof(p_jobs) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'workhorse_enqueue_many_v1 expects a JSON array of jobs, got %',
            coalesce(jsonb_typeof(p_jobs), 'NULL') USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- An element that is not an object is refused by its place in the batch.
    -- A key this function does not read is refused, not ignored: a misspelt
    -- option ("max_attempt") would otherwise enqueue the job with the default.
    -- Each object less the known keys must be empty: ~2.4 ms for 1,000 jobs,
    -- where a jsonpath over keyvalue() took ~38. (CASE, not AND: an element
    -- that is not an object must never reach the subtraction.)
    SELECT e.ord, jsonb_typeof(e.doc) AS kind,
           CASE WHEN jsonb_typeof(e.doc) = 'object' THEN
               (SELECT min(k.key) FROM jsonb_object_keys(e.doc - v_known_keys) AS k(key))
           END AS key
    INTO v_bad
    FROM jsonb_array_elements(p_jobs) WITH ORDINALITY AS e(doc, ord)
    WHERE CASE WHEN jsonb_typeof(e.doc) = 'object' THEN e.doc - v_known_keys <> '{}'::jsonb
               ELSE true END
    ORDER BY e.ord
    LIMIT 1;
    IF FOUND AND v_bad.kind <> 'object' THEN
        RAISE EXCEPTION 'workhorse_enqueue_many_v1: job % of the batch is a JSON %, not an '
            'object', v_bad.ord, v_bad.kind
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'each job is an object such as {"name": ..., "queue": ..., '
                         '"payload": {...}}';
    END IF;
    IF FOUND THEN
        RAISE EXCEPTION 'workhorse_enqueue_many_v1: job % of the batch has the key %, which is '
            'not a job field', v_bad.ord, to_jsonb(v_bad.key)::text
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'a job object takes ' || array_to_string(v_known_keys, ', ');
    END IF;

    -- The duration ranges of django_workhorse/limits.py, for every caller:
    -- beyond them make_interval overflows (silently, to a negative interval)
    -- and a run_at leaves the years Python can read back. One jsonpath pass,
    -- in C, over the whole batch; only a refused batch looks for the culprit.
    IF p_jobs @? ('$[*] ? ' || v_out_of_range)::jsonpath THEN
        SELECT e.ord, e.doc INTO v_bad
        FROM jsonb_array_elements(p_jobs) WITH ORDINALITY AS e(doc, ord)
        WHERE e.doc @? ('$ ? ' || v_out_of_range)::jsonpath
        LIMIT 1;
        RAISE EXCEPTION 'workhorse_enqueue_many_v1: job % of the batch has delay % and timeout %',
            v_bad.ord, coalesce(v_bad.doc -> 'delay', 'null'), coalesce(v_bad.doc -> 'timeout', 'null')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'delay must be from 0 to 3155760000 seconds (100 years), timeout from '
                         '0.000001 to 3155760000 seconds';
    END IF;

    -- Dependencies: checked, and their live prerequisites locked, before any
    -- row is written. A batch without them pays one jsonpath pass.
    IF p_jobs @? '$[*].depends_on' THEN
        SELECT e.ord, e.doc -> 'depends_on' AS deps INTO v_bad
        FROM jsonb_array_elements(p_jobs) WITH ORDINALITY AS e(doc, ord)
        WHERE jsonb_typeof(e.doc -> 'depends_on') NOT IN ('array', 'null')
           OR (jsonb_typeof(e.doc -> 'depends_on') = 'array' AND EXISTS (
                   SELECT 1 FROM jsonb_array_elements(e.doc -> 'depends_on') AS v(id)
                   WHERE jsonb_typeof(v.id) <> 'number'
                      OR v.id::text !~ '^[1-9][0-9]{0,17}$'))
        LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'workhorse_enqueue_many_v1: job % of the batch has depends_on %',
                v_bad.ord, left(v_bad.deps::text, 100)
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'depends_on is an array of job ids (whole numbers from 1)';
        END IF;
        v_prereqs := ARRAY(
            SELECT DISTINCT v.id::bigint
            FROM jsonb_array_elements(p_jobs) AS e(doc)
            CROSS JOIN LATERAL jsonb_array_elements_text(
                CASE WHEN jsonb_typeof(e.doc -> 'depends_on') = 'array'
                     THEN e.doc -> 'depends_on' END) AS v(id)
            ORDER BY 1);
        -- In id order, like every lock on runtime rows. KEY SHARE does not
        -- stop a heartbeat (no key changes); it makes a finish of the
        -- prerequisite wait for this transaction, so the finish sees the
        -- new edges and settles the dependent.
        v_live := ARRAY(
            SELECT rt.job_id FROM workhorse_job_runtime rt
            WHERE rt.job_id = ANY (v_prereqs)
            ORDER BY rt.job_id
            FOR KEY SHARE);
        -- A new statement, so a prerequisite that ended while we waited for
        -- its lock shows its outcome here. The outcomes are locked too (KEY
        -- SHARE, id order): an operator's retry deletes an outcome row, and
        -- a prerequisite that came back to life after this check would be
        -- counted as ended yet could end again unseen by the new edge.
        v_done := ARRAY(
            SELECT o.job_id FROM workhorse_job_outcome o
            WHERE o.job_id = ANY (v_prereqs) AND o.job_id <> ALL (v_live)
            ORDER BY o.job_id
            FOR KEY SHARE);
        SELECT p.id INTO v_bad
        FROM (SELECT unnest(v_prereqs) EXCEPT SELECT unnest(v_live)
              EXCEPT SELECT unnest(v_done)) AS p(id)
        ORDER BY p.id
        LIMIT 1;
        IF FOUND AND EXISTS (SELECT 1 FROM workhorse_job_runtime rt WHERE rt.job_id = v_bad.id) THEN
            -- It ended and was retried between the two statements above.
            RAISE EXCEPTION 'workhorse_enqueue_many_v1: prerequisite job % was retried while '
                'this enqueue checked it; retry the enqueue', v_bad.id
                USING ERRCODE = 'serialization_failure';
        ELSIF FOUND THEN
            RAISE EXCEPTION 'workhorse_enqueue_many_v1: depends_on names job %, which does not exist',
                v_bad.id
                USING ERRCODE = 'foreign_key_violation',
                      HINT = 'a job can only depend on jobs that exist: enqueue the '
                             'prerequisite first (in this transaction or an earlier one)';
        END IF;
    END IF;

    WITH input AS (
        SELECT nextval('workhorse_job_id_seq') AS id, e.ord, x.*,
               CASE
                   WHEN x.run_at IS NOT NULL THEN x.run_at
                   WHEN x.delay IS NOT NULL THEN now() + make_interval(secs => x.delay)
                   ELSE now()
               END AS due_at
        FROM jsonb_array_elements(p_jobs) WITH ORDINALITY AS e(doc, ord)
        CROSS JOIN LATERAL jsonb_to_record(e.doc) AS x(
            name text, queue text, payload jsonb, max_attempts integer, priority smallint,
            timeout double precision, backoff jsonb, max_stalled integer,
            idempotency_key text, trace_context jsonb, run_at timestamptz,
            delay double precision, depends_on jsonb, dependency_policy text)
    ),
    new_job AS (
        INSERT INTO workhorse_job AS j (id, name, queue, payload, max_attempts, priority, timeout,
                                        backoff, max_stalled, idempotency_key, trace_context,
                                        dependency_policy, first_due_at)
        -- An option left out takes its default from workhorse_job_defaults_v1()
        -- (folded to constants when this statement is planned).
        SELECT i.id, i.name, coalesce(i.queue, workhorse_job_defaults_v1() ->> 'queue'), i.payload,
               coalesce(i.max_attempts, (workhorse_job_defaults_v1() ->> 'max_attempts')::integer),
               coalesce(i.priority, (workhorse_job_defaults_v1() ->> 'priority')::smallint),
               make_interval(secs => coalesce(
                   i.timeout, (workhorse_job_defaults_v1() ->> 'timeout')::double precision)),
               -- The default policy is stored as NULL (tables_v1.sql).
               nullif(i.backoff, workhorse_job_defaults_v1() -> 'backoff'),
               coalesce(i.max_stalled, (workhorse_job_defaults_v1() ->> 'max_stalled')::integer),
               i.idempotency_key, i.trace_context,
               CASE WHEN jsonb_array_length(CASE WHEN jsonb_typeof(i.depends_on) = 'array'
                                                 THEN i.depends_on END) > 0
                    THEN coalesce(i.dependency_policy, 'all_succeeded') END,
               nullif(i.due_at, now())
        FROM input i
        ORDER BY i.ord
        ON CONFLICT (name, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING j.id, j.queue, j.name, j.priority, j.created_at, j.dependency_policy
    ),
    live AS (
        -- A job with prerequisites starts blocked, waiting for all of them;
        -- those that already ended are counted off right after this statement.
        INSERT INTO workhorse_job_runtime (job_id, queue, priority, state, run_at,
                                           pending_dependencies)
        SELECT n.id, n.queue, n.priority,
               CASE WHEN n.dependency_policy IS NOT NULL THEN 'blocked'
                    WHEN i.due_at > now() THEN 'scheduled' ELSE 'ready' END,
               i.due_at,
               CASE WHEN n.dependency_policy IS NULL THEN 0
                    ELSE (SELECT count(DISTINCT v.id)
                          FROM jsonb_array_elements_text(i.depends_on) AS v(id)) END
        FROM new_job n JOIN input i ON i.id = n.id
        RETURNING workhorse_job_runtime.job_id, workhorse_job_runtime.queue,
                  workhorse_job_runtime.state, workhorse_job_runtime.run_at
    ),
    projected AS (
        INSERT INTO workhorse_job_query (job_id, queue, name, created_at)
        SELECT n.id, n.queue, n.name, n.created_at FROM new_job n
    ),
    -- No 'enqueued' event is written: the job row holds all it said (its
    -- created_at, first_due_at and dependency_policy), and the timeline
    -- reads it from there (docs/decisions.md).
    woken AS (
        -- One notification per queue and commit: ready work wakes takers now,
        -- scheduled work tells them when to look again (epoch seconds).
        SELECT pg_notify('workhorse:' || l.queue,
                         CASE WHEN bool_or(l.state = 'ready') THEN ''
                              ELSE extract(epoch FROM min(l.run_at))::text END)
        FROM live l WHERE l.state <> 'blocked' GROUP BY l.queue
    )
    SELECT array_agg(coalesce(n.id, twin.id, existing.id) ORDER BY i.ord),
           array_agg(n.id IS NOT NULL ORDER BY i.ord)
    INTO v_ids, v_inserted
    FROM input i
    LEFT JOIN new_job n ON n.id = i.id
    -- A key repeated within this call resolves to the job this call inserted
    -- (not yet visible to the statement's snapshot); otherwise to the stored one.
    LEFT JOIN LATERAL (
        SELECT n2.id FROM new_job n2
        WHERE n.id IS NULL AND n2.name = i.name
          AND n2.id IN (SELECT i2.id FROM input i2 WHERE i2.idempotency_key = i.idempotency_key)
        LIMIT 1
    ) twin ON true
    LEFT JOIN LATERAL (
        SELECT e.id FROM workhorse_job e
        WHERE n.id IS NULL AND twin.id IS NULL
          AND e.name = i.name AND e.idempotency_key = i.idempotency_key
        -- LIMIT keeps this a probe of the idempotency index per input row:
        -- without it the planner may pull the subquery up into a hash join
        -- over a sequential scan of workhorse_job when its statistics are
        -- stale (analyzed while nearly empty): 6.8 ms per call at 8,000 jobs.
        LIMIT 1
    ) existing ON true
    CROSS JOIN (SELECT count(*) FROM woken) AS w;

    -- A key inserted by a concurrent transaction that committed while this
    -- statement waited on it is invisible to that statement's snapshot; the
    -- next statement (READ COMMITTED) sees it.
    IF array_position(v_ids, NULL) IS NOT NULL THEN
        SELECT array_agg(coalesce(x.id, e.id) ORDER BY x.ord) INTO v_ids
        FROM unnest(v_ids) WITH ORDINALITY AS x(id, ord)
        LEFT JOIN LATERAL (
            SELECT j.id FROM workhorse_job j
            WHERE x.id IS NULL
              AND j.name = p_jobs -> (x.ord::integer - 1) ->> 'name'
              AND j.idempotency_key = p_jobs -> (x.ord::integer - 1) ->> 'idempotency_key'
            LIMIT 1
        ) e ON true;
        v_missing := cardinality(array_positions(v_ids, NULL));
        IF v_missing > 0 THEN
            RAISE EXCEPTION 'workhorse_enqueue_many_v1: % job(s) collided on an idempotency key '
                'held by a transaction this one cannot see (isolation above READ COMMITTED?); '
                'retry the enqueue', v_missing USING ERRCODE = 'serialization_failure';
        END IF;
    END IF;

    IF v_prereqs IS NOT NULL THEN
        WITH edges AS (
            INSERT INTO workhorse_job_dependency (job_id, prerequisite_id)
            SELECT DISTINCT x.id, v.id::bigint
            FROM unnest(v_ids, v_inserted) WITH ORDINALITY AS x(id, ins, ord)
            CROSS JOIN LATERAL jsonb_array_elements_text(
                CASE WHEN x.ins AND jsonb_typeof(p_jobs -> (x.ord::integer - 1) -> 'depends_on')
                                    = 'array'
                     THEN p_jobs -> (x.ord::integer - 1) -> 'depends_on' END) AS v(id)
            RETURNING workhorse_job_dependency.job_id
        )
        SELECT ARRAY(SELECT DISTINCT e.job_id FROM edges e) INTO v_new;
        -- Prerequisites that had already ended (locked above, so still
        -- ended) count at once: settled by the same function as an end seen
        -- later, for these new jobs only.
        PERFORM workhorse_settle_dependents_v1(v_done, v_new);
    END IF;

    RETURN QUERY
    SELECT x.id, x.ins FROM unnest(v_ids, v_inserted) AS x(id, ins);
END;
$$;
