"""The worker's own connections: claims skip the WAL flush wait, finishes keep it."""

from __future__ import annotations

import pytest

from django_workhorse.worker.connection import connect

pytestmark = pytest.mark.django_db


def test_a_claim_connection_does_not_wait_for_the_wal_flush():
    with connect("default", wait_for_flush=False) as conn:
        assert conn.execute("SHOW synchronous_commit").fetchone()[0] == "off"


def test_other_worker_connections_commit_as_the_server_is_configured():
    with connect("default") as conn:
        configured = conn.execute(
            "SELECT reset_val FROM pg_settings WHERE name = 'synchronous_commit'"
        ).fetchone()[0]
        assert conn.execute("SHOW synchronous_commit").fetchone()[0] == configured
