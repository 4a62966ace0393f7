-- The built-in defaults of a job's options, spelled here and nowhere else.
--
-- SQL reads them through this function (enqueue, the backoff delay, the
-- columns of workhorse_job); Python reads the same JSON from this file
-- (django_workhorse/defaults.py takes the text between the named dollar
-- quotes below), and the WORKHORSE settings DEFAULT_QUEUE, DEFAULT_MAX_ATTEMPTS and
-- MAX_STALLED_COUNT default to these values. A job enqueued through SQL with
-- an option left out gets the value here; Python always sends every option
-- (the settings' values, read at enqueue).
--
-- IMMUTABLE with a constant body: the planner inlines it and folds each
-- workhorse_job_defaults_v1() ->> 'key' to a constant, so reading a default
-- costs nothing per row.
CREATE OR REPLACE FUNCTION workhorse_job_defaults_v1()
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT $defaults${
        "queue": "default",
        "max_attempts": 5,
        "priority": 0,
        "max_stalled": 1,
        "timeout": null,
        "backoff": {"kind": "exponential", "base": 1.0, "max": 3600.0, "jitter": 0.1}
    }$defaults$::jsonb
$$;
