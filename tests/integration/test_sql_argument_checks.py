"""SQL functions called by hand (psql, another language) refuse an argument
out of range with SQLSTATE 22023 and a message naming it, before anything
changes, instead of PostgreSQL's own error from deep inside."""

from __future__ import annotations

import psycopg
import pytest

from tests.factories import ActiveJobFactory, ReadyJobFactory

LEASES = [-1.0, float("nan"), None, 1e12]


def refused(conn: psycopg.Connection, sql: str, args: list) -> str:
    with pytest.raises(psycopg.errors.InvalidParameterValue) as raised:
        conn.execute(sql, args)
    return str(raised.value)


@pytest.mark.parametrize("lease", LEASES)
def test_a_claim_refuses_a_lease_length_out_of_range_and_claims_nothing(pg_connect, lease):
    job = ReadyJobFactory(queue="argcheck")
    conn = pg_connect()

    message = refused(
        conn,
        "SELECT * FROM workhorse_claim_many_v1('w', ARRAY['argcheck'], ARRAY[1], %s)",
        [lease],
    )

    assert "p_lease_seconds must be from 0 to 3155760000" in message
    state = conn.execute(
        "SELECT state FROM workhorse_job_runtime WHERE job_id = %s", [job.id]
    ).fetchone()
    assert state == ("ready",)


@pytest.mark.parametrize("lease", LEASES)
def test_a_heartbeat_refuses_a_lease_length_out_of_range_and_renews_nothing(pg_connect, lease):
    job = ActiveJobFactory()
    conn = pg_connect()
    before = conn.execute(
        "SELECT lease_expires_at FROM workhorse_job_runtime WHERE job_id = %s", [job.id]
    ).fetchone()

    message = refused(
        conn,
        "SELECT * FROM workhorse_heartbeat_many_v1(%s, %s::bigint[], %s::bigint[], %s)",
        [job.worker, [job.id], [job.fence], lease],
    )

    assert "p_lease_seconds must be from 0 to 3155760000" in message
    after = conn.execute(
        "SELECT lease_expires_at FROM workhorse_job_runtime WHERE job_id = %s", [job.id]
    ).fetchone()
    assert after == before


@pytest.mark.parametrize(
    ("window", "buckets", "count_limit"),
    [
        ("1 hour", 0, None),
        ("1 hour", -1, None),
        ("1 hour", None, None),
        ("0", 12, None),
        ("1 hour", 12, 0),
    ],
)
def test_queue_stats_refuse_a_window_bucket_count_or_count_limit_out_of_range(
    pg_connect, window, buckets, count_limit
):
    message = refused(
        pg_connect(),
        "SELECT * FROM workhorse_queue_stats_v1(%s::interval, %s, %s)",
        [window, buckets, count_limit],
    )

    assert "p_buckets from 1 to 1000" in message


@pytest.mark.parametrize("limit", [-1, None])
def test_recovery_refuses_a_limit_below_zero_and_recovers_nothing(pg_connect, limit):
    job = ActiveJobFactory(lease_seconds=0)
    conn = pg_connect()

    message = refused(conn, "SELECT * FROM workhorse_recover_stalled_v1(%s)", [limit])

    assert "p_limit must be 0 or more" in message
    state = conn.execute(
        "SELECT state FROM workhorse_job_runtime WHERE job_id = %s", [job.id]
    ).fetchone()
    assert state == ("active",)


@pytest.mark.parametrize(
    ("start", "days"), [("2030-01-01", -1), ("2030-01-01", 100_000), (None, 3)]
)
def test_ensure_partitions_refuses_a_day_count_out_of_range_and_creates_none(
    pg_connect, start, days
):
    conn = pg_connect()

    message = refused(conn, "SELECT workhorse_ensure_partitions_v1(%s::date, %s)", [start, days])

    assert "p_days from 0 to 1000" in message
    created = conn.execute(
        "SELECT count(*) FROM pg_class WHERE relname LIKE 'workhorse_job_event_p2030%%'"
    ).fetchone()
    assert created == (0,)


def test_a_job_object_with_a_key_that_is_not_a_job_field_is_refused_naming_it(pg_connect):
    conn = pg_connect()
    jobs = [
        {"name": "demo.jobs.noop", "queue": "argcheck", "payload": {}},
        {"name": "demo.jobs.noop", "queue": "argcheck", "payload": {}, "max_attempt": 3},
    ]

    message = refused(
        conn, "SELECT * FROM workhorse_enqueue_many_v1(%s::jsonb)", [psycopg.types.json.Jsonb(jobs)]
    )

    assert 'job 2 of the batch has the key "max_attempt", which is not a job field' in message
    assert conn.execute(
        "SELECT count(*) FROM workhorse_job WHERE queue = 'argcheck'"
    ).fetchone() == (0,)


@pytest.mark.parametrize(
    ("element", "kind"), [(5, "number"), ([1], "array"), ("x", "string"), (None, "null")]
)
def test_a_batch_element_that_is_not_an_object_is_refused_naming_its_place(
    pg_connect, element, kind
):
    conn = pg_connect()
    jobs = [{"name": "demo.jobs.noop", "queue": "argcheck", "payload": {}}, element]

    message = refused(
        conn, "SELECT * FROM workhorse_enqueue_many_v1(%s::jsonb)", [psycopg.types.json.Jsonb(jobs)]
    )

    assert f"job 2 of the batch is a JSON {kind}, not an object" in message
    assert conn.execute(
        "SELECT count(*) FROM workhorse_job WHERE queue = 'argcheck'"
    ).fetchone() == (0,)


def test_a_job_object_with_every_job_field_is_taken(pg_connect):
    conn = pg_connect()
    job = {
        "name": "demo.jobs.noop",
        "queue": "argcheck",
        "payload": {},
        "max_attempts": 2,
        "priority": 1,
        "timeout": 60,
        "backoff": None,
        "max_stalled": 1,
        "idempotency_key": "every-field",
        "trace_context": None,
        "delay": 5,
        "depends_on": [],
        "dependency_policy": "all_succeeded",
    }

    (row,) = conn.execute(
        "SELECT * FROM workhorse_enqueue_many_v1(%s::jsonb)", [psycopg.types.json.Jsonb([job])]
    ).fetchall()

    assert row[1] is True
