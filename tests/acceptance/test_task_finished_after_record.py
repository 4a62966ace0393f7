"""``task_finished`` is sent once the run's end is recorded (docs/django-tasks.md#signals).

A receiver's ``get_result`` reads the end the signal reports, whichever way
the worker records it (in writer batches, or with the next claim on the
handler's thread when it has one slot) and under ``run_jobs``. The signal
is sent on the worker's hook thread, so a receiver that never returns holds
up no other job's result and no shutdown.
"""

from __future__ import annotations

import signal

import pytest
from jobtests.models import RunRecord
from jobtests.tasks import add, finish_hangs, read_back

from django_workhorse.models import JobOutcome
from django_workhorse.testing import run_jobs

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

GRACE = 20


def read_backs(result) -> list[str]:
    return list(
        RunRecord.objects.filter(job_id=int(result.id), label__startswith="read-back:")
        .order_by("id")
        .values_list("label", flat=True)
    )


@pytest.mark.parametrize("concurrency", ["1", "4"], ids=["one slot", "batched"])
def test_a_task_finished_receiver_reads_back_the_end_the_worker_recorded(
    start_worker, wait_until, concurrency
):
    result = read_back.enqueue("kept")
    worker = start_worker("--queues", "jobtests.tasks", "--concurrency", concurrency)
    wait_until(lambda: read_backs(result), what="task_finished received")
    assert worker.stop() == 0
    assert read_backs(result) == ["read-back:SUCCESSFUL:SUCCESSFUL"]


def test_a_task_finished_receiver_reads_back_the_end_run_jobs_recorded():
    result = read_back.enqueue("kept")
    run_jobs(queues=["jobtests.tasks"])
    assert read_backs(result) == ["read-back:SUCCESSFUL:SUCCESSFUL"]


def test_a_task_finished_receiver_that_never_returns_holds_up_no_result_and_no_shutdown(
    start_worker, wait_until
):
    worker = start_worker(
        "--queues",
        "jobtests.tasks",
        "--concurrency",
        "4",
        settings={"SHUTDOWN_GRACE": GRACE},
        persistent_connections=True,
    )
    hanging = finish_hangs.enqueue("first")
    wait_until(
        lambda: RunRecord.objects.filter(job_id=int(hanging.id), label="finish-hangs:called"),
        timeout=30,
        what="the hanging receiver called",
    )
    around = [int(add.enqueue(i, 1).id) for i in range(200)]
    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=around).count() == 200,
        timeout=120,
        what="the 200 tasks around it recorded",
    )
    assert set(JobOutcome.objects.filter(job_id__in=around).values_list("state", flat=True)) == {
        "succeeded"
    }

    worker.send(signal.SIGTERM)
    assert worker.wait_exit(GRACE) == 0, worker.stderr
    assert "hook call(s) not made behind the task_finished hook" in worker.stderr
