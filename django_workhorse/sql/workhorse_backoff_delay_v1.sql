-- Seconds to wait before retrying after the given (1-based) failed attempt,
-- from a job's backoff policy:
--   {"kind": "exponential", "base": s, "max": s, "jitter": 0..1}
--       base * 2^(attempt-1), capped at max, then spread by +/- jitter
--   {"kind": "fixed", "delay": s}
-- Jitter keeps a burst of failures from retrying in lock step.
CREATE OR REPLACE FUNCTION workhorse_backoff_delay_v1(p_backoff jsonb, p_attempt integer)
RETURNS double precision
LANGUAGE sql VOLATILE AS $$
    -- A key the policy leaves out takes the default backoff's value
    -- (workhorse_job_defaults_v1(), folded to constants at planning).
    SELECT CASE coalesce(p_backoff->>'kind', workhorse_job_defaults_v1() -> 'backoff' ->> 'kind')
        WHEN 'fixed' THEN greatest(coalesce((p_backoff->>'delay')::double precision, 0), 0)
        ELSE greatest(0, least(
                coalesce((p_backoff->>'base')::double precision,
                         (workhorse_job_defaults_v1() -> 'backoff' ->> 'base')::double precision)
                    * power(2, least(greatest(p_attempt, 1) - 1, 60)),
                coalesce((p_backoff->>'max')::double precision,
                         (workhorse_job_defaults_v1() -> 'backoff' ->> 'max')::double precision))
            * (1 + coalesce((p_backoff->>'jitter')::double precision,
                            (workhorse_job_defaults_v1() -> 'backoff' ->> 'jitter')::double precision)
                   * (2 * random() - 1)))
    END
$$;
