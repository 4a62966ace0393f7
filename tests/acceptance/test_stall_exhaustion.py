"""MAX_STALLED_COUNT (a job's ``max_stalled``) is how many stalls a job
survives; past it the job fails, the recovering worker logs it at ERROR and
ON_JOB_FAILURE receives a StalledJobError naming the cause. The worker flag
that once claimed to set it is gone."""

from __future__ import annotations

import signal

import pytest
from django.test import override_settings
from jobtests.jobs import sleep
from jobtests.models import FailureCall, RunRecord

from django_workhorse.models import JobOutcome

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

SHORT_LEASES = {
    "LOCK_DURATION": 2,
    "STALLED_INTERVAL": 0.5,
    "ON_JOB_FAILURE": "jobtests.hooks.record_failure",
}


@override_settings(WORKHORSE={"MAX_STALLED_COUNT": 0})
def test_a_job_stalled_past_max_stalled_count_fails_logs_an_error_and_reaches_the_hook(
    start_worker, wait_until
):
    (handle,) = sleep.enqueue_many([{"seconds": 60}])
    victim = start_worker("--queues", "jobtests.sleep", settings=SHORT_LEASES)
    wait_until(lambda: RunRecord.objects.filter(pid=victim.pid).exists(), what="the job running")
    victim.send(signal.SIGKILL)
    assert victim.wait_exit(10) == -signal.SIGKILL

    rescuer = start_worker("--queues", "jobtests.sleep", settings=SHORT_LEASES)
    call = wait_until(
        lambda: FailureCall.objects.filter(job_id=handle.id).first(),
        timeout=30,
        what="ON_JOB_FAILURE called for the stalled job",
    )
    assert rescuer.stop() == 0

    outcome = JobOutcome.objects.get(job_id=handle.id)
    assert (outcome.state, outcome.stall_count, outcome.error["type"]) == (
        "failed",
        1,
        "django_workhorse.exceptions.StalledJobError",
    )
    assert (call.name, call.queue, call.will_retry, call.exception_type) == (
        sleep.name,
        "jobtests.sleep",
        False,
        "StalledJobError",
    )
    assert call.exception_message == (
        "the job stalled 1 times (max_stalled is 0): its worker stopped renewing the lease"
    )
    assert (
        f"ERROR django_workhorse.worker job {sleep.name} jobtests.sleep #{handle.id} "
        "failed: it stalled 1 times (max_stalled is 0)"
    ) in rescuer.stderr
    assert RunRecord.objects.filter(job_id=handle.id).count() == 1  # never ran again


def test_runworker_has_no_max_stalled_count_flag(start_worker):
    worker = start_worker("--max-stalled-count", "3", ready=False)
    assert worker.wait_exit(30) == 2
    assert "unrecognized arguments: --max-stalled-count" in worker.stderr
