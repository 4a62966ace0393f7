-- A page of jobs for the operator, newest first, keyset-paged by job id
-- (job ids grow with creation, and workhorse_job_query is never updated).
-- Pass p_before_id (the last id of a page) for the next older page, or
-- p_after_id (the first id of a page) for the next newer one; never both.
--
-- The source of the scan follows the state filter, so no broad index on
-- state is needed: live states walk the small runtime table, failed and
-- canceled the partial index workhorse_outcome_unsuccessful, succeeded the
-- outcome's primary key, and no state filter the query projection (through
-- its queue or name index when those filters are given). Each row's current
-- state is then read by primary key from runtime or outcome.
--
-- The statement is built per call (EXECUTE) so that it is planned for the
-- filters actually given: one generic plan cannot serve every combination.
CREATE OR REPLACE FUNCTION workhorse_list_jobs_v1(
    p_queue text DEFAULT NULL,
    p_name text DEFAULT NULL,
    p_state text DEFAULT NULL,
    p_created_after timestamptz DEFAULT NULL,
    p_created_before timestamptz DEFAULT NULL,
    p_before_id bigint DEFAULT NULL,
    p_after_id bigint DEFAULT NULL,
    p_limit integer DEFAULT 50,
    p_idempotency_key text DEFAULT NULL,
    -- The error type of failed or canceled jobs (the failures view's links).
    p_error_type text DEFAULT NULL,
    -- Jobs whose name starts with this (job names are few: they are found
    -- by a skip scan of the name index, one probe per name).
    p_name_prefix text DEFAULT NULL,
    -- Jobs whose payload contains this object (jsonb @>). Through the GIN
    -- index workhorse_job_payload_gin when the operator made it
    -- (docs/admin.md, "Search"); without it, live jobs only, each probed by
    -- primary key: the search then reads the runtime table, never history.
    p_payload jsonb DEFAULT NULL
) RETURNS TABLE (
    job_id bigint, name text, queue text, state text, priority smallint, attempt integer,
    max_attempts integer, stall_count integer, idempotency_key text,
    created_at timestamptz, run_at timestamptz, finished_at timestamptz,
    error_type text, error_message text
)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_from  text;
    v_id    text;
    v_where text[] := ARRAY['true'];
    v_names text[];
BEGIN
    IF p_state IS NOT NULL AND p_state NOT IN
       ('blocked', 'scheduled', 'ready', 'active', 'succeeded', 'failed', 'canceled') THEN
        RAISE EXCEPTION 'workhorse_list_jobs_v1: unknown state %', p_state
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_before_id IS NOT NULL AND p_after_id IS NOT NULL THEN
        RAISE EXCEPTION 'workhorse_list_jobs_v1: give p_before_id or p_after_id, not both'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- 1,001: Admin.list_jobs asks for one row more than its largest page
    -- (1,000) to know whether an older page follows.
    IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 1001 THEN
        RAISE EXCEPTION 'workhorse_list_jobs_v1: p_limit must be from 1 to 1001, got %', p_limit
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    IF p_state IN ('blocked', 'scheduled', 'ready', 'active') THEN
        v_from := 'workhorse_job_runtime s JOIN workhorse_job_query q ON q.job_id = s.job_id';
        v_id := 's.job_id';
        v_where := v_where || format('s.state = %L', p_state);
        IF p_queue IS NOT NULL THEN
            v_where := v_where || 's.queue = $1'::text;
        END IF;
    ELSIF p_state IS NOT NULL THEN
        -- The state is a literal so that the planner can match the partial index.
        v_from := 'workhorse_job_outcome s JOIN workhorse_job_query q ON q.job_id = s.job_id';
        v_id := 's.job_id';
        v_where := v_where || format('s.state = %L', p_state);
        IF p_queue IS NOT NULL THEN
            v_where := v_where || 'q.queue = $1'::text;
        END IF;
    ELSE
        v_from := 'workhorse_job_query q';
        v_id := 'q.job_id';
        IF p_queue IS NOT NULL THEN
            v_where := v_where || 'q.queue = $1'::text;
        END IF;
    END IF;
    IF p_name IS NOT NULL THEN
        v_where := v_where || 'q.name = $2'::text;
    END IF;
    IF p_created_after IS NOT NULL THEN
        v_where := v_where || 'q.created_at >= $4'::text;
    END IF;
    IF p_created_before IS NOT NULL THEN
        v_where := v_where || 'q.created_at < $5'::text;
    END IF;
    IF p_before_id IS NOT NULL THEN
        v_where := v_where || (v_id || ' < $6');
    END IF;
    IF p_after_id IS NOT NULL THEN
        v_where := v_where || (v_id || ' > $7');
    END IF;
    IF p_error_type IS NOT NULL THEN
        IF p_state IS DISTINCT FROM 'failed' AND p_state IS DISTINCT FROM 'canceled' THEN
            RAISE EXCEPTION 'workhorse_list_jobs_v1: p_error_type needs p_state failed or canceled'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        v_where := v_where || 's.error ->> ''type'' = $10'::text;
    END IF;
    IF p_name_prefix IS NOT NULL THEN
        WITH RECURSIVE names(n) AS (
            (SELECT qn.name FROM workhorse_job_query qn
             WHERE qn.name >= p_name_prefix ORDER BY qn.name LIMIT 1)
            UNION ALL
            SELECT (SELECT qn.name FROM workhorse_job_query qn
                    WHERE qn.name > names.n ORDER BY qn.name LIMIT 1)
            FROM names WHERE names.n IS NOT NULL
        )
        SELECT coalesce(array_agg(names.n), '{}') INTO v_names FROM names
        WHERE starts_with(names.n, p_name_prefix);
        v_where := v_where || 'q.name = ANY ($11)'::text;
    END IF;
    IF p_payload IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM pg_class c WHERE c.relname = 'workhorse_job_payload_gin'
                   AND c.relkind = 'i'
                   AND c.relnamespace = (SELECT t.relnamespace FROM pg_class t
                                         WHERE t.oid = 'workhorse_job'::regclass)) THEN
            v_where := v_where || (v_id || ' IN (SELECT j.id FROM workhorse_job j'
                                   ' WHERE j.payload @> $12)');
        ELSE
            v_where := v_where || (v_id || ' IN (SELECT r.job_id FROM workhorse_job_runtime r'
                                   ' JOIN workhorse_job j ON j.id = r.job_id'
                                   ' WHERE j.payload @> $12)');
        END IF;
    END IF;
    IF p_idempotency_key IS NOT NULL THEN
        -- The unique index is on (name, idempotency_key): probe it once per
        -- job name, the names found by a skip scan of the name index.
        v_where := v_where || (v_id || $k$ IN (
            WITH RECURSIVE names(n) AS (
                (SELECT qn.name FROM workhorse_job_query qn ORDER BY qn.name LIMIT 1)
                UNION ALL
                SELECT (SELECT qn.name FROM workhorse_job_query qn
                        WHERE qn.name > names.n ORDER BY qn.name LIMIT 1)
                FROM names WHERE names.n IS NOT NULL
            )
            SELECT j.id FROM names
            JOIN workhorse_job j ON j.name = names.n AND j.idempotency_key = $9)$k$);
    END IF;

    -- Domain-typed columns (tables_v1.sql) are cast to the declared base types:
    -- RETURN QUERY wants them exactly.
    RETURN QUERY EXECUTE format(
        $q$
        WITH picked AS (
            SELECT %1$s AS job_id FROM %2$s WHERE %3$s ORDER BY %1$s %4$s LIMIT $8
        )
        SELECT j.id, j.name::text, j.queue::text, coalesce(rt.state::text, o.state::text),
               j.priority::smallint, coalesce(rt.attempt::integer, o.attempts),
               j.max_attempts::integer, coalesce(rt.stall_count::integer, o.stall_count),
               j.idempotency_key::text, j.created_at, rt.run_at::timestamptz, o.finished_at,
               CASE WHEN jsonb_typeof(o.error) = 'object' THEN o.error ->> 'type' END,
               CASE WHEN jsonb_typeof(o.error) = 'object'
                    THEN left(o.error ->> 'message', 300) END
        FROM picked p
        -- Primary-key probes per picked row, whatever the statistics say.
        CROSS JOIN LATERAL (SELECT * FROM workhorse_job j WHERE j.id = p.job_id OFFSET 0) j
        LEFT JOIN LATERAL (SELECT * FROM workhorse_job_runtime rt
                           WHERE rt.job_id = p.job_id OFFSET 0) rt ON true
        LEFT JOIN LATERAL (SELECT * FROM workhorse_job_outcome o
                           WHERE o.job_id = p.job_id OFFSET 0) o ON true
        ORDER BY p.job_id DESC
        $q$,
        v_id, v_from, array_to_string(v_where, ' AND '),
        CASE WHEN p_after_id IS NOT NULL THEN 'ASC' ELSE 'DESC' END)
    USING p_queue, p_name, p_state, p_created_after, p_created_before,
          p_before_id, p_after_id, p_limit, p_idempotency_key,
          p_error_type, v_names, p_payload;
END;
$$;
