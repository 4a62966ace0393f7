-- How many jobs match the job list's filters (workhorse_list_jobs_v1's
-- queue, name, state and creation range), counted up to p_cap: a count of
-- p_cap means "at least p_cap". It reads the rows the list would, through
-- the same sources (the runtime table for live states, the outcome table
-- for terminal ones, the query projection otherwise), and stops at p_cap,
-- so its cost is bounded by p_cap index entries (plus those the filters
-- skip), never a count of all history. The job list shows a count per
-- state with p_cap 1,000 ("1,000+"); a filter-wide action counts what it
-- will act on before it asks.
CREATE OR REPLACE FUNCTION workhorse_count_jobs_v1(
    p_queue text DEFAULT NULL,
    p_name text DEFAULT NULL,
    p_state text DEFAULT NULL,
    p_created_after timestamptz DEFAULT NULL,
    p_created_before timestamptz DEFAULT NULL,
    p_cap integer DEFAULT 1000
) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_from  text;
    v_where text[] := ARRAY['true'];
    v_count bigint;
BEGIN
    IF p_state IS NOT NULL AND p_state NOT IN
       ('blocked', 'scheduled', 'ready', 'active', 'succeeded', 'failed', 'canceled') THEN
        RAISE EXCEPTION 'workhorse_count_jobs_v1: unknown state %', p_state
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_cap IS NULL OR p_cap < 1 THEN
        RAISE EXCEPTION 'workhorse_count_jobs_v1: p_cap must be at least 1, got %', p_cap
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_state IN ('blocked', 'scheduled', 'ready', 'active') THEN
        v_where := v_where || format('s.state = %L', p_state);
        IF p_queue IS NOT NULL THEN
            v_where := v_where || 's.queue = $1'::text;
        END IF;
        -- The projection is read only when a filter needs it, and then by a
        -- primary-key probe per live row: as a plain join the planner hashed
        -- the live rows and walked the name's whole index (201,500 entries,
        -- 51 ms at 1,000,000 jobs) to find live ones, which are the newest.
        IF p_name IS NULL AND p_created_after IS NULL AND p_created_before IS NULL THEN
            v_from := 'workhorse_job_runtime s';
        ELSE
            v_from := 'workhorse_job_runtime s CROSS JOIN LATERAL (SELECT qq.name, qq.created_at'
                      ' FROM workhorse_job_query qq WHERE qq.job_id = s.job_id OFFSET 0) q';
        END IF;
    ELSIF p_state IS NOT NULL THEN
        v_where := v_where || format('s.state = %L', p_state);
        IF p_queue IS NULL AND p_name IS NULL AND p_created_after IS NULL
           AND p_created_before IS NULL THEN
            v_from := 'workhorse_job_outcome s';
        ELSE
            v_from := 'workhorse_job_outcome s JOIN workhorse_job_query q ON q.job_id = s.job_id';
            IF p_queue IS NOT NULL THEN
                v_where := v_where || 'q.queue = $1'::text;
            END IF;
        END IF;
    ELSE
        v_from := 'workhorse_job_query q';
        IF p_queue IS NOT NULL THEN
            v_where := v_where || 'q.queue = $1'::text;
        END IF;
    END IF;
    IF p_name IS NOT NULL THEN
        v_where := v_where || 'q.name = $2'::text;
    END IF;
    IF p_created_after IS NOT NULL THEN
        v_where := v_where || 'q.created_at >= $3'::text;
    END IF;
    IF p_created_before IS NOT NULL THEN
        v_where := v_where || 'q.created_at < $4'::text;
    END IF;
    EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM %s WHERE %s LIMIT $5) t',
                   v_from, array_to_string(v_where, ' AND '))
    INTO v_count
    USING p_queue, p_name, p_created_after, p_created_before, p_cap;
    RETURN v_count;
END;
$$;
