"""The worker's own connections carry nothing beyond a transaction: a claim
skips the WAL flush wait for its own transaction only, and no statement is
ever prepared (docs/scaling.md, "What the worker needs of PgBouncer")."""

from __future__ import annotations

import pytest

from django_workhorse.db import store
from django_workhorse.worker.connection import application_name, connect

pytestmark = pytest.mark.django_db


def configured(conn) -> str:
    return conn.execute(
        "SELECT reset_val FROM pg_settings WHERE name = 'synchronous_commit'"
    ).fetchone()[0]


def test_a_claim_commits_without_waiting_for_the_flush_in_its_own_transaction_only():
    with connect("default", autocommit=False) as conn, conn.cursor() as cursor:
        with conn.transaction():
            store.claim_many(cursor, "w", ["no-such-queue"], [1], 30, flush=False)
            assert conn.execute("SHOW synchronous_commit").fetchone()[0] == "off"
        assert conn.execute("SHOW synchronous_commit").fetchone()[0] == configured(conn)


def test_a_worker_connection_starts_with_no_session_setting():
    with connect("default") as conn:
        assert conn.execute("SHOW synchronous_commit").fetchone()[0] == configured(conn)
        assert (
            conn.execute("SELECT name FROM pg_settings WHERE source = 'session'").fetchall() == []
        )


def test_a_worker_connection_never_prepares_a_statement():
    with connect("default") as conn, conn.cursor() as cursor:
        for _ in range(10):  # psycopg prepares after 5 runs by default
            store.claim_many(cursor, "w", ["no-such-queue"], [1], 30, flush=False)
        assert conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()[0] == 0


def test_a_worker_connection_names_its_role_and_the_end_of_the_worker_id():
    assert application_name("workhorse-worker", "host:12:abcdef") == (
        "workhorse-worker host:12:abcdef"
    )
    long_id = "a-very-long-host-name-of-a-container-in-a-cluster.example.com:4242:abcdef"
    name = application_name("workhorse-heartbeat", long_id)
    assert len(name.encode()) == 63
    assert name.startswith("workhorse-heartbeat ") and name.endswith(":4242:abcdef")
