"""``VACUUM_INTERVAL`` decides whether a worker runs vacuum turns at all: with
a number it starts one thread that takes a turn that often and stops with
the worker; with None it starts none (docs/worker.md#vacuum)."""

from __future__ import annotations

import threading

from django_workhorse.worker.vacuum import VacuumSweeper
from tests.helpers import poll_until
from tests.worker.conftest import IN_PROCESS

pytestmark = IN_PROCESS


def vacuum_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "workhorse-vacuum"]


def started(running, caplog) -> None:
    """Wait until the worker has started every thread it is going to: it says
    which database it serves once they all run (the listener's self-test can
    end before the vacuum thread is started)."""
    poll_until(
        lambda: "workhorse worker " in caplog.text and " serving " in caplog.text,
        timeout=30,
        interval=0.01,
        what="the worker's threads to start",
    )


def test_a_vacuum_interval_runs_the_turns_on_a_thread_of_their_own(start_worker, caplog):
    caplog.set_level("INFO", logger="django_workhorse.worker")
    running = start_worker({"default": 1}, VACUUM_INTERVAL=0.2)
    started(running, caplog)

    sweeper = running.worker._vacuum
    assert isinstance(sweeper, VacuumSweeper)
    assert sweeper.interval == 0.2
    assert vacuum_threads() == [sweeper]

    assert running.stop() == 0
    assert not sweeper.is_alive()


def test_vacuum_interval_none_starts_no_vacuum_thread(start_worker, caplog):
    caplog.set_level("INFO", logger="django_workhorse.worker")
    running = start_worker({"default": 1}, VACUUM_INTERVAL=None)
    started(running, caplog)

    assert running.worker._vacuum is None
    assert vacuum_threads() == []
    assert "workhorse vacuum: off (VACUUM_INTERVAL is None)" in caplog.text
    assert running.stop() == 0
