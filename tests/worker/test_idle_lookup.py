"""The claim loop looks the next scheduled run_at up once per empty claim,
not on every wait: with one slot it waits once per job, and that lookup was
a round trip per job. A job scheduled while the loop believes nothing is
scheduled still runs at its time (its enqueue's NOTIFY says when)."""

from __future__ import annotations

import time

import pytest

from django_workhorse.db import store
from django_workhorse.worker import worker as worker_module
from tests.helpers import poll_until
from tests.worker import jobs
from tests.worker.conftest import IN_PROCESS

pytestmark = IN_PROCESS


def succeeded(cursor, ids: list[int]) -> int:
    cursor.execute(
        "SELECT count(*) FROM workhorse_job_outcome WHERE state = 'succeeded' AND job_id = ANY(%s)",
        [ids],
    )
    return cursor.fetchone()[0]


@pytest.fixture
def lookups(monkeypatch) -> list:
    """The queues of each look-up of the next run_at the worker makes."""
    made: list = []
    real = store.next_run_at_and_clock

    def counted(cursor, queues):
        made.append(queues)
        return real(cursor, queues)

    monkeypatch.setattr(worker_module.store, "next_run_at_and_clock", counted)
    return made


def test_a_one_slot_drain_does_not_look_up_the_next_run_at_per_job(start_worker, cursor, lookups):
    ids = [jobs.gated.enqueue(value=n).id for n in range(40)]

    start_worker({"inproc.gated": 1})
    poll_until(
        lambda: succeeded(cursor, ids) == len(ids), timeout=60, interval=0.05, what="the drain"
    )

    assert len(lookups) <= 5, f"{len(lookups)} lookups for {len(ids)} jobs"


def test_a_job_scheduled_after_the_lookup_runs_at_its_time(start_worker, cursor):
    running = start_worker({"inproc.gated": 1})
    poll_until(
        lambda: running.ledger.due_known, timeout=30, interval=0.02, what="the first idle lookup"
    )

    job_id = jobs.gated.options(delay=0.5).enqueue(value=1).id

    poll_until(
        lambda: succeeded(cursor, [job_id]) == 1,
        timeout=30,
        interval=0.02,
        what="the scheduled job",
    )


class SkewedClock:
    """The ``time`` module as the worker module sees it, with a wall clock
    ``skew`` seconds off the database's (which runs on this machine). Only a
    skewed clock is faked: this machine's clock cannot be set for a test."""

    def __init__(self, skew: float) -> None:
        self.skew = skew

    def time(self) -> float:
        return time.time() + self.skew

    def __getattr__(self, name: str):
        return getattr(time, name)


@pytest.mark.parametrize("skew", [-3600.0, 3600.0], ids=["behind", "ahead"])
def test_a_worker_whose_clock_is_off_runs_a_scheduled_job_at_its_time_without_polling(
    start_worker, cursor, monkeypatch, lookups, skew
):
    monkeypatch.setattr(worker_module, "time", SkewedClock(skew))
    running = start_worker({"inproc.gated": 1}, POLL_INTERVAL=60)
    poll_until(
        lambda: running.ledger.due_known, timeout=30, interval=0.02, what="the first idle lookup"
    )
    before = len(lookups)

    job_id = jobs.gated.options(delay=1).enqueue(value=1).id
    # Behind, the wait was timed on the worker's clock: a POLL_INTERVAL late.
    poll_until(lambda: succeeded(cursor, [job_id]) == 1, timeout=15, interval=0.02, what="the job")
    # Ahead, the job looked overdue at once: the loop claimed and looked up
    # every 10 ms until it was.
    assert len(lookups) - before <= 5, f"{len(lookups) - before} look-ups while it waited"
