"""A worker whose NOTIFYs never arrive (a transaction-mode pooler between it
and PostgreSQL) says at start that it polls every ``POLL_INTERVAL``, and
still picks jobs up at that pace (docs/worker.md, "Wake-ups and control")."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from django_workhorse.core import registry
from django_workhorse.core.definitions import JobDefinition
from django_workhorse.worker import wakeups
from tests.helpers import poll_until
from tests.worker import jobs
from tests.worker.conftest import IN_PROCESS

pytestmark = IN_PROCESS

NOT_DELIVERED = "NOTIFY is not delivered"


class Deaf:
    """A listener connection behind a pooler: LISTEN and NOTIFY are accepted,
    and nothing is ever delivered."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def notifies(self, timeout: float | None = None, **_: Any):
        time.sleep(timeout or 0)
        return iter(())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


@pytest.fixture
def notifications_lost(monkeypatch) -> None:
    connect = wakeups.connect
    monkeypatch.setattr(wakeups, "connect", lambda *a, **kw: Deaf(connect(*a, **kw)))


def test_a_worker_that_hears_no_notify_says_it_polls_and_still_runs_jobs(
    notifications_lost, start_worker, caplog
):
    with caplog.at_level(logging.WARNING, logger="django_workhorse.worker"):
        worker = start_worker({"inproc.gated": 1}, POLL_INTERVAL=0.5)
        poll_until(
            lambda: any(NOT_DELIVERED in r.getMessage() for r in caplog.records),
            timeout=10,
            interval=0.05,
            what="the worker to say it polls",
        )
        handle = jobs.gated.enqueue(value=7)
        poll_until(
            lambda: handle.refresh().status == "succeeded",
            timeout=10,
            interval=0.05,
            what="the polling worker to run the job",
        )
        worker.stop()

    (line,) = [r.getMessage() for r in caplog.records if NOT_DELIVERED in r.getMessage()]
    assert line == (
        "workhorse: NOTIFY is not delivered: one sent on database 'default' did not reach "
        "the LISTEN connection on 'default' within 2 s (another database? a pooler?); "
        "polling every 0.5 s instead"
    )


def test_a_worker_whose_notify_arrives_says_nothing_of_polling(start_worker, caplog):
    with caplog.at_level(logging.WARNING, logger="django_workhorse.worker"):
        worker = start_worker({"inproc.gated": 1})
        poll_until(
            lambda: worker.worker._listener.self_test_done.is_set(),
            timeout=10,
            interval=0.05,
            what="the listener's self-test",
        )
        worker.stop()

    assert not any(NOT_DELIVERED in r.getMessage() for r in caplog.records)


def registered_late() -> None:
    """A handler registered while a worker runs (a module imported late)."""


def test_a_handler_registered_while_the_worker_idles_wakes_it(
    notifications_lost, start_worker, caplog, monkeypatch
):
    monkeypatch.setattr(registry, "_jobs", dict(registry._jobs))
    with caplog.at_level(logging.WARNING, logger="django_workhorse.worker"):
        worker = start_worker({"inproc.gated": 1}, POLL_INTERVAL=60)
        poll_until(
            lambda: any(NOT_DELIVERED in r.getMessage() for r in caplog.records),
            timeout=10,
            interval=0.05,
            what="the worker to say it polls",
        )
    handle = jobs.gated.enqueue(value=7)  # heard by nobody: the worker polls every 60 s
    time.sleep(0.5)
    assert handle.refresh().status == "ready"

    registry.register(JobDefinition(registered_late, name="inproc.late", queue="inproc.late"))
    poll_until(
        lambda: handle.refresh().status == "succeeded",
        timeout=10,
        interval=0.05,
        what="the worker woken by the registration to run the job",
    )
    worker.stop()
