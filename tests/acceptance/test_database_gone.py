"""A worker whose database is gone still stops on the first SIGTERM.

The worker reaches PostgreSQL through a relay the test takes away (the shared
server runs on): its sessions end and every reconnection is refused, so it
sits in its reconnect loop. A process manager sends one SIGTERM and waits.
"""

from __future__ import annotations

import signal
from datetime import datetime
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.db import connection
from jobtests.jobs import record

from django_workhorse.models import JobOutcome
from tests.acceptance.conftest import FAST_COMMITS, database_url
from tests.proxy import Relay

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def url_through(relay: Relay) -> str:
    parts = urlsplit(database_url(**FAST_COMMITS))
    auth = parts.netloc.rpartition("@")[0]
    netloc = f"{auth}@127.0.0.1:{relay.port}" if auth else f"127.0.0.1:{relay.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def worker_through_a_relay(start_worker, poll_interval: float, *flags: str):
    """A worker of jobtests.record whose connections all pass through a relay
    the test can close and reopen."""
    s = connection.settings_dict
    relay = Relay(s.get("HOST") or "127.0.0.1", int(s.get("PORT") or 5432))
    worker = start_worker(
        "--queues",
        "jobtests.record",
        *flags,
        env={"DATABASE_URL": url_through(relay)},
        settings={"POLL_INTERVAL": poll_interval},
    )
    return relay, worker


def database_now() -> datetime:
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        return cursor.fetchone()[0]


def idle_sessions_since(roles: list[str], since: datetime) -> int:
    """How many connections of ``roles`` (the test's one worker's: named
    ``<role> <id>``) were opened after ``since`` and are idle, done with
    what they were opened for."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND split_part(application_name, ' ', 1) = ANY(%s)"
            " AND backend_start > %s AND state = 'idle'",
            [roles, since],
        )
        return cursor.fetchone()[0]


def test_the_first_sigterm_stops_a_worker_waiting_for_its_database(start_worker, wait_until):
    """Bug: the reconnect loop only looked for the forced stop, so the worker
    needed a second signal."""
    relay, worker = worker_through_a_relay(start_worker, poll_interval=0.2)

    relay.close()
    wait_until(
        lambda: "cannot reconnect" in worker.stderr, timeout=30, what="the worker reconnecting"
    )
    worker.send(signal.SIGTERM)

    assert worker.wait_exit(20) == 0
    assert "second SIGTERM" not in worker.stderr


LOST = "workhorse listener: connection lost"
TRIED = "workhorse listener: cannot reconnect yet"
"""Logged at DEBUG (``-v 3``), once for each try that failed."""


def test_the_listener_says_once_that_it_lost_the_database_and_wakes_the_worker_again(
    start_worker, wait_until
):
    relay, worker = worker_through_a_relay(start_worker, 60, "-v", "3")

    relay.close()
    wait_until(lambda: LOST in worker.stderr, timeout=30, what="the listener losing its connection")
    # Tries at 0.5, 1.5 and 3.5 s: each one used to log a warning.
    wait_until(lambda: worker.stderr.count(TRIED) >= 3, timeout=30, what="three tries failing")
    assert worker.stderr.count(LOST) == 1, worker.stderr

    reopened = database_now()
    relay.reopen()
    # The listener's next try comes within 10 s, and the claim loop's: once
    # both are connected and idle, the claim made when the listener came
    # back has found nothing.
    wait_until(
        lambda: idle_sessions_since(["workhorse-listener", "workhorse-worker"], reopened) == 2,
        timeout=20,
        what="the listener and the claim loop connected again",
    )
    job = record.enqueue(label="after the outage")
    # POLL_INTERVAL is 60 s: only the listener's wake-up starts it this soon.
    wait_until(lambda: JobOutcome.objects.filter(job_id=job.id).exists(), timeout=5)
    assert worker.stop() == 0
