"""The loop the schedule sweeper, the depth sampler, retention and vacuum share
(worker/periodic.py): an error in one turn is logged and the next turn runs."""

from __future__ import annotations

import logging

import psycopg
import pytest

from django_workhorse.worker.periodic import PeriodicThread
from tests.helpers import poll_until

pytestmark = pytest.mark.django_db(transaction=True)


class FailsOnce(PeriodicThread):
    what = "the test's turn"

    def __init__(self, error: BaseException) -> None:
        super().__init__("default", 0.05, name="workhorse-test-periodic")
        self.error = error
        self.turns = 0

    def tick(self, cursor) -> None:
        self.turns += 1
        if self.turns == 1:
            raise self.error
        cursor.execute("SELECT 1")


def run_until(thread: PeriodicThread, done) -> None:
    """Start ``thread``, wait until ``done()`` after its failed first turn, stop it."""
    thread.start()
    try:
        poll_until(done, timeout=10, interval=0.02, what="more turns after the error")
    finally:
        thread.stop()
    assert not thread.is_alive()


@pytest.mark.parametrize("error", [ValueError("a bug"), KeyError("missing")])
def test_an_unexpected_error_in_a_turn_is_logged_and_the_next_turn_runs(caplog, error):
    thread = FailsOnce(error)
    with caplog.at_level(logging.ERROR, logger="django_workhorse.worker"):
        run_until(thread, lambda: thread.turns >= 3)
    [record] = [r for r in caplog.records if "the test's turn failed" in r.getMessage()]
    assert record.exc_info is not None and record.exc_info[1] is error


class LosesItsConnectionOnce(PeriodicThread):
    what = "the test's turn"

    def __init__(self) -> None:
        super().__init__("default", 0.05, name="workhorse-test-periodic")
        self.connections: list[object] = []

    def tick(self, cursor) -> None:
        self.connections.append(cursor.connection)
        if len(self.connections) == 1:
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        cursor.execute("SELECT 1")


def test_a_database_error_in_a_turn_is_a_warning_and_the_next_turn_reconnects(caplog):
    thread = LosesItsConnectionOnce()
    with caplog.at_level(logging.WARNING, logger="django_workhorse.worker"):
        run_until(thread, lambda: len(thread.connections) >= 3)
    [record] = [r for r in caplog.records if "the test's turn failed" in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        "workhorse: the test's turn failed (server closed the connection unexpectedly); "
        "the next turn retries"
    )
    first, second, third = thread.connections[:3]
    assert first.closed and second is not first  # dropped, and a new one opened
    assert third is second  # kept once it works
