"""Sync slots: every job runs once, and long jobs run side by side up to the count.

A submit wakes at most one thread and each thread wakes the next, so these
check that the chain never strands a job and never caps the concurrency
below the slot count.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from django_workhorse.context import JobContext
from django_workhorse.core.definitions import JobDefinition
from django_workhorse.db.store import ClaimedJob
from django_workhorse.worker.execution import Finished, Running, SyncSlots


def make_run(func, job_id: int, **payload) -> Running:
    definition = JobDefinition(func=func, name=f"tests.{func.__name__}", queue="tests")
    job = ClaimedJob(
        job_id, definition.name, "tests", payload, 1, 1, 1, None, datetime.now(UTC), False
    )
    context = JobContext(job_id=job_id, name=job.name, queue="tests", attempt=1, max_attempts=1)
    return Running(job, definition, context)


class Collector:
    """The ``done`` callback: gathers Finished items, signals when ``expected`` arrived."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.items: list[Finished] = []
        self.lock = threading.Lock()
        self.all_done = threading.Event()

    def __call__(self, item: Finished) -> None:
        with self.lock:
            self.items.append(item)
            if len(self.items) == self.expected:
                self.all_done.set()


def test_a_burst_of_short_jobs_runs_every_job_exactly_once():
    calls: list[int] = []

    def short(n: int) -> int:
        calls.append(n)
        return n

    done = Collector(5000)
    slots = SyncSlots(100, done, "tests")
    try:
        for start in range(0, 5000, 100):
            slots.submit([make_run(short, n, n=n) for n in range(start, start + 100)])
        assert done.all_done.wait(30), f"{len(done.items)} of 5000 jobs finished"
    finally:
        slots.close()
    assert sorted(calls) == list(range(5000))
    assert all(item.ok for item in done.items)
    assert sorted(item.value for item in done.items) == list(range(5000))


@pytest.mark.parametrize("count", [1, 8, 32])
def test_long_jobs_run_side_by_side_up_to_the_slot_count(count):
    # Each job waits at a barrier for all the others: it only opens if every
    # job is running at the same time, each on its own thread.
    barrier = threading.Barrier(count, timeout=20)

    def meet() -> int:
        return barrier.wait()

    done = Collector(count)
    slots = SyncSlots(count, done, "tests")
    try:
        slots.submit([make_run(meet, n) for n in range(count)])
        assert done.all_done.wait(30)
    finally:
        slots.close()
    assert all(item.ok for item in done.items), [item.error for item in done.items]
    assert len({item.running.context.job_id for item in done.items}) == count


def test_a_handler_that_raises_reports_the_exception_and_the_slot_goes_on():
    def boom(n: int) -> int:
        if n % 2:
            raise ValueError(f"odd {n}")
        return n

    done = Collector(10)
    slots = SyncSlots(2, done, "tests")
    try:
        for n in range(10):
            slots.submit([make_run(boom, n, n=n)])
        assert done.all_done.wait(10)
    finally:
        slots.close()
    failed = sorted(str(item.error) for item in done.items if not item.ok)
    assert failed == [f"odd {n}" for n in (1, 3, 5, 7, 9)]
