"""Handler log records carry the job; ``ON_JOB_FAILURE`` sees every failed run."""

from __future__ import annotations

import pytest
from jobtests.jobs import doomed, log_warning, record
from jobtests.models import CapturedLog, FailureCall

from django_workhorse.models import JobOutcome

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def test_log_records_from_a_handler_carry_job_id_queue_and_attempt(start_worker, wait_until):
    handle = log_warning.enqueue(message="hello from the handler")
    worker = start_worker("--queues", "jobtests.logs")
    captured = wait_until(
        lambda: CapturedLog.objects.filter(message__endswith="hello from the handler").first(),
        what="the handler's log record stored",
    )
    wait_until(lambda: JobOutcome.objects.filter(job_id=handle.id, state="succeeded").exists())
    assert worker.stop() == 0

    assert (captured.logger, captured.level, captured.pid) == ("jobtests", "WARNING", worker.pid)
    assert (
        captured.workhorse_job_id,
        captured.workhorse_queue,
        captured.workhorse_attempt,
    ) == (handle.id, "jobtests.logs", 1)
    assert "handler says hello from the handler" in worker.stderr


def test_on_job_failure_is_told_whether_the_job_will_retry(start_worker, wait_until):
    handle = doomed.enqueue()
    worker = start_worker(
        "--queues",
        "jobtests.doomed",
        settings={"ON_JOB_FAILURE": "jobtests.hooks.record_failure"},
    )
    wait_until(
        lambda: FailureCall.objects.filter(job_id=handle.id).count() == 2,
        what="two hook calls",
    )
    assert worker.stop() == 0

    calls = FailureCall.objects.filter(job_id=handle.id).order_by("attempt")
    assert [
        (c.attempt, c.max_attempts, c.will_retry, c.timed_out, c.exception_type) for c in calls
    ] == [(1, 2, True, False, "PlannedFailure"), (2, 2, False, False, "PlannedFailure")]
    assert {(c.name, c.queue, c.hook) for c in calls} == {
        ("jobtests.jobs.doomed", "jobtests.doomed", "record_failure")
    }
    assert JobOutcome.objects.get(job_id=handle.id).state == "failed"


def test_a_raising_on_job_failure_hook_does_not_disturb_processing(start_worker, wait_until):
    failing = doomed.enqueue()
    worker = start_worker(
        "--queues",
        "jobtests.doomed,jobtests.record",
        settings={"ON_JOB_FAILURE": "jobtests.hooks.record_then_raise"},
    )
    wait_until(
        lambda: FailureCall.objects.filter(job_id=failing.id).count() == 2,
        what="the broken hook called for both attempts",
    )
    later = record.enqueue(label="after the broken hook")
    wait_until(lambda: JobOutcome.objects.filter(job_id=later.id).exists(), what="a later job done")
    assert worker.alive()
    assert worker.stop() == 0

    outcome = JobOutcome.objects.get(job_id=failing.id)
    assert (outcome.state, outcome.attempts) == ("failed", 2)
    assert JobOutcome.objects.get(job_id=later.id).state == "succeeded"
    assert f"on_job_failure hook raised for job {failing.id}" in worker.stderr
    assert "BrokenHookError" in worker.stderr


def test_an_on_job_failure_hook_calling_sys_exit_does_not_stop_the_worker(start_worker, wait_until):
    failing = doomed.enqueue()
    worker = start_worker(
        "--queues",
        "jobtests.doomed,jobtests.record",
        settings={"ON_JOB_FAILURE": "jobtests.hooks.record_then_exit"},
    )
    wait_until(
        lambda: FailureCall.objects.filter(job_id=failing.id).count() == 2,
        what="the hook called for both attempts",
    )
    later = record.enqueue(label="after the exiting hook")
    wait_until(lambda: JobOutcome.objects.filter(job_id=later.id).exists(), what="a later job done")
    assert worker.alive()
    assert worker.stop() == 0
    assert JobOutcome.objects.get(job_id=failing.id).state == "failed"
    assert f"on_job_failure hook raised for job {failing.id}" in worker.stderr
