"""Failed attempts: retried with backoff, failed for good past max_attempts,
and ended as timed out when they outlive the job's timeout."""

from __future__ import annotations

import time
from datetime import datetime

import pytest
from django.db import connection
from jobtests.jobs import async_blocks_loop, doomed, flaky, sleep, slow_once, too_slow
from jobtests.models import FailureCall, RunRecord

from django_workhorse.models import AttemptHistory, JobEvent, JobOutcome
from tests.helpers import timeline_events

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def outcome_of(job_id: int):
    return JobOutcome.objects.filter(job_id=job_id).first()


def test_a_job_failing_twice_succeeds_at_attempt_3_after_backoff(start_worker, wait_until):
    handle = flaky.enqueue(failures=2)
    worker = start_worker("--queues", "jobtests.flaky")
    outcome = wait_until(lambda: outcome_of(handle.id), what="the job terminal")
    assert worker.stop() == 0

    assert (outcome.state, outcome.attempts, outcome.result) == ("succeeded", 3, 3)
    history = AttemptHistory.objects.filter(job_id=handle.id).order_by("attempt")
    assert [(h.attempt, h.outcome) for h in history] == [
        (1, "failed"),
        (2, "failed"),
        (3, "succeeded"),
    ]
    assert [h.error["type"] for h in history[:2]] == ["jobtests.jobs.PlannedFailure"] * 2
    assert history[0].error["message"] == "planned failure 1 of 2"

    # exponential(base=0.2, jitter=0): 0.2 s after attempt 1, 0.4 s after attempt 2
    # (run_at and the event time come from one statement's now()), and no attempt
    # is claimed before its run_at.
    retries = JobEvent.objects.filter(job_id=handle.id, kind="retry_scheduled").order_by("at")
    with connection.cursor() as cursor:
        claims = {attempt: at for _, at, attempt in timeline_events(cursor, [handle.id], "claimed")}
    assert [e.attempt for e in retries] == [1, 2]
    for event, expected in zip(retries, (0.2, 0.4), strict=True):
        run_at = datetime.fromisoformat(event.data["run_at"])
        delay = (run_at - event.at).total_seconds()
        assert delay == pytest.approx(expected, abs=0.001), (event.attempt, delay)
        assert claims[event.attempt + 1] >= run_at


def test_a_job_failing_every_attempt_ends_failed_at_max_attempts(start_worker, wait_until):
    handle = doomed.enqueue()
    worker = start_worker("--queues", "jobtests.doomed")
    outcome = wait_until(lambda: outcome_of(handle.id), what="the job terminal")
    assert worker.stop() == 0

    assert (outcome.state, outcome.attempts) == ("failed", 2)
    assert outcome.error["type"] == "jobtests.jobs.PlannedFailure"
    assert outcome.error["message"] == "doomed attempt 2"
    history = AttemptHistory.objects.filter(job_id=handle.id).order_by("attempt")
    assert [(h.attempt, h.outcome) for h in history] == [(1, "failed"), (2, "failed")]
    kinds = JobEvent.objects.filter(job_id=handle.id).order_by("at", "id")
    assert [e.kind for e in kinds][-1] == "failed"
    assert [e.kind for e in kinds].count("retry_scheduled") == 1
    assert "doomed attempt 2" in worker.stderr  # logged at ERROR as terminal


def test_an_attempt_outliving_its_timeout_ends_timed_out(start_worker, wait_until):
    handle = too_slow.enqueue(seconds=5)
    worker = start_worker(
        "--queues",
        "jobtests.timeout",
        settings={"SHUTDOWN_GRACE": 1, "ON_JOB_FAILURE": "jobtests.hooks.record_failure"},
    )
    outcome = wait_until(lambda: outcome_of(handle.id), what="the job terminal")
    call = wait_until(lambda: FailureCall.objects.filter(job_id=handle.id).first())
    assert worker.stop() == 0

    assert (outcome.state, outcome.attempts) == ("failed", 1)
    (attempt,) = AttemptHistory.objects.filter(job_id=handle.id)
    assert attempt.outcome == "timed_out"
    assert attempt.error["type"].endswith("JobTimeout")
    ran_for = (attempt.finished_at - attempt.started_at).total_seconds()
    assert 0.9 <= ran_for < 4, ran_for  # timeout=1; the handler would sleep 5
    assert (call.timed_out, call.will_retry, call.attempt) == (True, False, 1)


def test_an_abandoned_timed_out_handler_does_not_make_the_worker_spin(start_worker, wait_until):
    """The thread of a timed-out sync handler keeps sleeping; the worker, with
    nothing else to do, must sleep too rather than loop on the passed deadline."""
    handle = too_slow.enqueue(seconds=30)
    worker = start_worker("--queues", "jobtests.timeout", settings={"SHUTDOWN_GRACE": 1})
    wait_until(lambda: outcome_of(handle.id), what="the attempt timed out")

    before, started = worker.cpu_seconds(), time.monotonic()
    time.sleep(2)  # a measurement window, not a wait for a condition
    used = worker.cpu_seconds() - before
    window = time.monotonic() - started

    assert used < 0.15 * window, f"the idle worker used {used:.2f} s of CPU in {window:.2f} s"
    assert worker.stop() == 0


def test_a_timed_out_job_retried_beside_its_abandoned_thread_frees_both_slots(
    start_worker, wait_until
):
    # The first run outlives its timeout; the retry runs in the other slot
    # of the same worker while the abandoned thread still sleeps.
    retried = sleep.options(timeout=1, max_attempts=2).enqueue(seconds=3, rerun_seconds=0)
    worker = start_worker("--queues", "jobtests.sleep", "--concurrency", "2")
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=retried.id, state="succeeded").exists(),
        timeout=20,
        what="the retry succeeded",
    )
    wait_until(
        lambda: RunRecord.objects.filter(job_id=retried.id, finished_at__isnull=False).count() == 2,
        timeout=20,
        what="the abandoned first run returned",
    )

    # Both slots are free again: two jobs run side by side.
    pair = [h.id for h in sleep.enqueue_many([{"seconds": 1.0}] * 2)]
    wait_until(
        lambda: RunRecord.objects.filter(job_id__in=pair, finished_at__isnull=False).count() == 2,
        timeout=20,
        what="both jobs ran",
    )
    assert worker.stop() == 0
    first, second = RunRecord.objects.filter(job_id__in=pair).order_by("started_at")
    assert second.started_at < first.finished_at, "the two jobs ran one after the other"
    assert list(
        AttemptHistory.objects.filter(job_id=retried.id)
        .order_by("attempt")
        .values_list("attempt", "outcome")
    ) == [(1, "timed_out"), (2, "succeeded")]


def test_an_async_handler_blocking_its_loop_past_the_timeout_does_not_make_the_worker_spin(
    start_worker, wait_until
):
    """The asyncio timeout can only fire once the handler yields; meanwhile
    the claim loop, with nothing to do, must sleep rather than loop on the
    passed deadline."""
    handle = async_blocks_loop.enqueue(seconds=4)
    worker = start_worker("--queues", "jobtests.asyncblock", settings={"SHUTDOWN_GRACE": 1})
    wait_until(lambda: RunRecord.objects.filter(job_id=handle.id).exists(), what="the run")
    time.sleep(1.2)  # past the one-second timeout, with the loop still blocked

    before, started = worker.cpu_seconds(), time.monotonic()
    time.sleep(2)  # a measurement window, not a wait for a condition
    used = worker.cpu_seconds() - before
    window = time.monotonic() - started

    assert used < 0.15 * window, f"the worker used {used:.2f} s of CPU in {window:.2f} s"
    outcome = wait_until(lambda: outcome_of(handle.id), timeout=15, what="the attempt closed")
    assert (outcome.state, outcome.attempts) == ("failed", 1)
    assert AttemptHistory.objects.get(job_id=handle.id).outcome == "timed_out"
    assert worker.stop() == 0


def test_a_burst_worker_waits_for_a_slot_held_by_a_timed_out_thread(start_worker, wait_until):
    # One slot: the first job times out after 1 s but its thread holds the
    # slot for 3 s; the second job is due all along and must still run.
    stuck, queued = too_slow.enqueue(seconds=3), too_slow.enqueue(seconds=0)
    worker = start_worker("--burst", "--queues", "jobtests.timeout", "--concurrency", "1")
    assert worker.wait_exit(30) == 0, worker.stderr

    assert outcome_of(stuck.id).state == "failed"
    assert AttemptHistory.objects.get(job_id=stuck.id).outcome == "timed_out"
    assert outcome_of(queued.id).state == "succeeded"


def test_a_timed_out_attempt_is_retried_when_retry_on_names_timeout_error(start_worker, wait_until):
    handle = slow_once.enqueue(seconds=4)
    worker = start_worker("--queues", "jobtests.timeout", settings={"SHUTDOWN_GRACE": 1})
    outcome = wait_until(lambda: outcome_of(handle.id), what="the job terminal")
    assert worker.stop() == 0

    assert (outcome.state, outcome.attempts, outcome.result) == ("succeeded", 2, 2)
    history = AttemptHistory.objects.filter(job_id=handle.id).order_by("attempt")
    assert [(h.attempt, h.outcome) for h in history] == [(1, "timed_out"), (2, "succeeded")]
