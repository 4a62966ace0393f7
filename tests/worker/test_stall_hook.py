"""A job failed by too many stalls reaches ``ON_JOB_FAILURE`` from the worker
that recovered it, with ``stalled=True``, ``will_retry=False`` and a
``StalledJobError``, on the hook thread, never on the heartbeat's (a slow
hook must not let leases expire) nor the claim loop's (docs/worker.md,
"Recovery")."""

from __future__ import annotations

import threading

import pytest
from django.test import override_settings

import django_workhorse as workhorse
from tests.factories import ActiveJobFactory
from tests.helpers import poll_until
from tests.worker.conftest import IN_PROCESS

pytestmark = IN_PROCESS

QUEUE = "inproc.stalls"
CALLS: list[tuple[workhorse.JobFailure, threading.Thread]] = []
"""Each call of the hook, with the thread it ran on."""


def record_failure(failure: workhorse.JobFailure) -> None:
    CALLS.append((failure, threading.current_thread()))


@pytest.fixture(autouse=True)
def _clear() -> None:
    CALLS.clear()


def test_a_job_failed_for_stalling_reaches_the_hook_on_the_hook_thread(start_worker):
    with override_settings(WORKHORSE={"MAX_STALLED_COUNT": 0}):
        # Claimed by a worker that is gone: its lease expires at once.
        made = ActiveJobFactory(queue=QUEUE, worker="gone", lease_seconds=0.001)

    worker = start_worker(
        {QUEUE: 1},
        on_job_failure=f"{__name__}.record_failure",
        STALLED_INTERVAL=0.05,
    )
    poll_until(lambda: CALLS, timeout=30, interval=0.02, what="the hook to be called")
    worker.stop()

    [(failure, thread)] = CALLS
    assert (failure.job_id, failure.queue, failure.stalled, failure.will_retry) == (
        made.id,
        QUEUE,
        True,
        False,
    )
    assert not failure.timed_out
    assert isinstance(failure.exception, workhorse.StalledJobError)
    assert str(failure.exception) == (
        "the job stalled 1 times (max_stalled is 0): its worker stopped renewing the lease"
    )
    assert thread.name == "workhorse-hooks"
    assert made.snapshot().state == "failed"
