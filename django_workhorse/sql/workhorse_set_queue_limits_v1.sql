-- Sets the limits of one queue, shared by every worker: at most
-- p_concurrency active jobs, and at most p_rate claims in any p_period_seconds.
-- NULL removes that limit (p_rate and p_period_seconds go together). The
-- queue's row is created when it has none. Returns what happened: 'changed'
-- or 'unchanged', with the limits now in force. A change wakes the queue's
-- idle workers, so a raised limit is used at once. The claim record of the
-- rate limit is kept: lowering a rate counts the claims already made.
CREATE OR REPLACE FUNCTION workhorse_set_queue_limits_v1(
    p_queue text,
    p_concurrency integer DEFAULT NULL,
    p_rate integer DEFAULT NULL,
    p_period_seconds double precision DEFAULT NULL
) RETURNS TABLE (
    status text, concurrency_limit integer, rate_limit integer, rate_period_seconds double precision
)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_period interval;
    v_old    workhorse_queue%ROWTYPE;
BEGIN
    IF p_queue IS NULL OR p_queue !~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,52}$' THEN
        RAISE EXCEPTION 'workhorse_set_queue_limits_v1: % is not a valid queue name', quote_nullable(p_queue)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_concurrency IS NOT NULL AND NOT p_concurrency BETWEEN 1 AND 100000 THEN
        RAISE EXCEPTION 'workhorse_set_queue_limits_v1: concurrency must be from 1 to 100000 (or NULL for none), got %', p_concurrency
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (p_rate IS NULL) <> (p_period_seconds IS NULL) THEN
        RAISE EXCEPTION 'workhorse_set_queue_limits_v1: give a rate together with its period (e.g. 100 per 60 seconds), or neither'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_rate IS NOT NULL AND NOT p_rate BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'workhorse_set_queue_limits_v1: rate must be from 1 to 10000 claims per period, got %', p_rate
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- An interval keeps microseconds: a shorter period would become 0.
    IF p_period_seconds IS NOT NULL
       AND NOT (p_period_seconds >= 0.000001 AND p_period_seconds <= 31622400) THEN
        RAISE EXCEPTION 'workhorse_set_queue_limits_v1: period must be more than 0 (at least 1 microsecond) and at most 366 days in seconds, got %', p_period_seconds
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_period := make_interval(secs => p_period_seconds);

    INSERT INTO workhorse_queue AS wq (name) VALUES (p_queue) ON CONFLICT (name) DO NOTHING;
    SELECT * INTO v_old FROM workhorse_queue wq WHERE wq.name = p_queue FOR UPDATE;
    IF v_old.concurrency_limit IS NOT DISTINCT FROM p_concurrency
       AND v_old.rate_limit IS NOT DISTINCT FROM p_rate
       AND v_old.rate_period IS NOT DISTINCT FROM v_period THEN
        RETURN QUERY SELECT 'unchanged'::text, p_concurrency, p_rate, p_period_seconds;
        RETURN;
    END IF;
    UPDATE workhorse_queue wq
    SET concurrency_limit = p_concurrency, rate_limit = p_rate, rate_period = v_period,
        updated_at = now()
    WHERE wq.name = p_queue;
    PERFORM pg_notify('workhorse:' || p_queue, '');
    RETURN QUERY SELECT 'changed'::text, p_concurrency, p_rate, p_period_seconds;
END;
$$;
