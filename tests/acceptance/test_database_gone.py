"""A worker whose database is gone still stops on the first SIGTERM.

The worker reaches PostgreSQL through a relay the test takes away (the shared
server runs on): its sessions end and every reconnection is refused, so it
sits in its reconnect loop. A process manager sends one SIGTERM and waits.
"""

from __future__ import annotations

import signal
import time
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


def worker_through_a_relay(start_worker, poll_interval: float):
    """A worker of jobtests.record whose connections all pass through a relay
    the test can close and reopen."""
    s = connection.settings_dict
    relay = Relay(s.get("HOST") or "127.0.0.1", int(s.get("PORT") or 5432))
    worker = start_worker(
        "--queues",
        "jobtests.record",
        env={"DATABASE_URL": url_through(relay)},
        settings={"POLL_INTERVAL": poll_interval},
    )
    return relay, worker


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


def test_the_listener_says_once_that_it_lost_the_database_and_wakes_the_worker_again(
    start_worker, wait_until
):
    relay, worker = worker_through_a_relay(start_worker, poll_interval=60)

    relay.close()
    wait_until(
        lambda: "workhorse listener: connection lost" in worker.stderr,
        timeout=30,
        what="the listener losing its connection",
    )
    time.sleep(4)  # tries at 0.5, 1.5 and 3.5 s: each one used to log a warning
    assert worker.stderr.count("workhorse listener: connection lost") == 1, worker.stderr

    relay.reopen()
    time.sleep(11)  # the listener's next try comes within 10 s
    job = record.enqueue(label="after the outage")
    # POLL_INTERVAL is 60 s: only the listener's wake-up starts it this soon.
    wait_until(lambda: JobOutcome.objects.filter(job_id=job.id).exists(), timeout=5)
    assert worker.stop() == 0
