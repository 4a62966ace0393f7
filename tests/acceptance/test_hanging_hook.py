"""A hook never holds up the ledger (docs/worker.md#hooks).

``ON_JOB_FAILURE`` and ``ON_JOB_CANCELED`` run on a thread of their own,
after the result they report is recorded. A hook that never returns is
reported once, with its job id; the results of every other job are still
recorded, claims and heartbeats go on, and SIGTERM still stops the worker
within its shutdown grace (the hook calls queued behind it are not made).
"""

from __future__ import annotations

import signal

import pytest
from jobtests.fates import QUEUE, fate
from jobtests.jobs import record
from jobtests.models import FailureCall

from django_workhorse.models import JobOutcome
from django_workhorse.worker import hookcalls

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

GRACE = 20


def test_a_hook_that_never_returns_holds_up_no_result_and_no_shutdown(start_worker, wait_until):
    worker = start_worker(
        "--queues",
        f"{QUEUE},jobtests.record",
        "--concurrency",
        "4",
        settings={"ON_JOB_FAILURE": "jobtests.hooks.record_then_hang", "SHUTDOWN_GRACE": GRACE},
        persistent_connections=True,
    )
    hanging = fate.enqueue(kind="raise")
    wait_until(
        lambda: FailureCall.objects.filter(job_id=hanging.id).exists(),
        timeout=30,
        what="the hook called for the first failure",
    )

    around = [h.id for h in record.enqueue_many([{"label": f"around {i}"} for i in range(1000)])]
    failing_after = fate.enqueue(kind="raise")
    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=[*around, failing_after.id]).count() == 1001,
        timeout=300,
        what="the 1,000 jobs and the later failure recorded",
    )
    assert set(JobOutcome.objects.filter(job_id__in=around).values_list("state", flat=True)) == {
        "succeeded"
    }
    assert JobOutcome.objects.get(job_id=failing_after.id).state == "failed"
    assert hanging.refresh().status == "failed"  # its second attempt, recorded too

    report = f"the on_job_failure hook for job {hanging.id} has run for"
    wait_until(
        lambda: report in worker.stderr,
        timeout=hookcalls.SLOW_AFTER + 30,
        what="the hanging hook reported",
    )
    assert worker.stderr.count(report) == 1

    worker.send(signal.SIGTERM)
    assert worker.wait_exit(GRACE) == 0, worker.stderr
    assert "hook call(s) not made behind the on_job_failure hook" in worker.stderr
