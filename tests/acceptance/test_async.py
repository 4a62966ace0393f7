"""An async handler runs on the worker's event loop and succeeds."""

from __future__ import annotations

import pytest
from jobtests.jobs import async_echo
from jobtests.models import RunRecord

from django_workhorse.models import AttemptHistory, JobOutcome

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def test_an_async_handler_runs_and_succeeds(start_worker, wait_until):
    handle = async_echo.enqueue(value="hi")
    worker = start_worker("--queues", "jobtests.async")
    outcome = wait_until(
        lambda: JobOutcome.objects.filter(job_id=handle.id).first(), what="the job terminal"
    )
    assert worker.stop() == 0

    assert (outcome.state, outcome.attempts, outcome.result) == (
        "succeeded",
        1,
        {"echo": "hi", "attempt": 1},
    )
    (run,) = RunRecord.objects.filter(job_id=handle.id)
    assert (run.pid, run.label, run.worker_id) == (worker.pid, "async", worker.worker_id)
    assert list(AttemptHistory.objects.filter(job_id=handle.id).values_list("outcome")) == [
        ("succeeded",)
    ]
