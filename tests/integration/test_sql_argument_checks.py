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
