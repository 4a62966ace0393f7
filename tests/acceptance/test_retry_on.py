"""``@workhorse.job(retry_on=(...))``: a failure is retried only when the
exception is one of those (or a subclass); any other fails the job at once,
whatever attempts are left (docs/worker.md#failures-retries-timeouts)."""

from __future__ import annotations

import pytest
from jobtests.jobs import picky

from django_workhorse.models import AttemptHistory
from django_workhorse.testing import run_jobs

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

CASES = {
    # failures raised at attempts 1, 2, ... -> (state, attempts made)
    "listed-then-succeeds": (["refused", "reset"], "succeeded", 3),
    "listed-then-other": (["refused", "value"], "failed", 2),
    "other-at-once": (["value"], "failed", 1),
    "listed-every-time": (["refused"] * 4, "failed", 4),
}


def outcomes(job_id: int) -> list[tuple[int, str, str]]:
    return [
        (a.attempt, a.outcome, (a.error or {}).get("type", ""))
        for a in AttemptHistory.objects.filter(job_id=job_id).order_by("attempt")
    ]


def test_runworker_retries_only_the_listed_exceptions(start_worker, wait_until):
    handles = {case: picky.enqueue(failures=failures) for case, (failures, _, _) in CASES.items()}

    worker = start_worker("--queues", "jobtests.picky", "--concurrency", "4")
    for case, handle in handles.items():
        wait_until(lambda h=handle: h.refresh().status in ("succeeded", "failed"), what=case)
    assert worker.stop() == 0

    for case, handle in handles.items():
        _, state, attempts = CASES[case]
        snapshot = handle.snapshot
        assert (snapshot.state, snapshot.current_attempt) == (state, attempts), case
    assert outcomes(handles["listed-then-other"].id) == [
        (1, "failed", "builtins.ConnectionRefusedError"),
        (2, "failed", "builtins.ValueError"),
    ]


def test_run_jobs_records_retry_on_as_a_worker_does():
    handles = {case: picky.enqueue(failures=failures) for case, (failures, _, _) in CASES.items()}

    report = run_jobs(names=[picky])

    for case, handle in handles.items():
        _, state, attempts = CASES[case]
        assert (handle.refresh().status, handle.snapshot.current_attempt) == (state, attempts)
    will_retry = [
        run.will_retry for run in report.runs if run.job_id == handles["listed-then-other"].id
    ]
    assert will_retry == [True, False]
