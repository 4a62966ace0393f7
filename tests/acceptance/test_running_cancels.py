"""Cancelling running jobs in real ``runworker`` processes.

An async handler, a sync handler that calls ``raise_if_canceled()`` in a
loop and a sync handler stuck in ``time.sleep(3600)`` each end ``canceled``:
told by a notification on ``workhorse_control`` (the heartbeat is made far
too slow to be the messenger), and told by the heartbeat when the LISTEN
connection is cut. The job is never retried; the worker goes on with the
right number of slots (a stuck thread keeps its slot until it returns);
``ON_JOB_CANCELED`` is called and ``ON_JOB_FAILURE`` is not. A cancel that
arrives while the worker is shutting down ends the job canceled, not ready.
"""

from __future__ import annotations

import signal
from datetime import datetime, timedelta

import pytest
from django.db import connection, transaction
from jobtests.jobs import (
    async_stuck,
    cancels_itself,
    checks_for_cancel,
    rendezvous,
    short_sleep,
    stuck,
)
from jobtests.models import FailureCall, RunRecord

from django_workhorse import Admin
from django_workhorse.models import AttemptHistory, JobEvent, JobOutcome, JobRuntime
from tests.helpers import cut_connections, poll_until

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

QUEUE = ["--queues", "jobtests.cancel", "--concurrency", "2"]
HOOKS = {
    "ON_JOB_CANCELED": "jobtests.hooks.record_canceled",
    "ON_JOB_FAILURE": "jobtests.hooks.record_failure",
}
BY_NOTIFICATION = {**HOOKS, "LOCK_DURATION": 600, "LOCK_RENEW_INTERVAL": 300}
"""A heartbeat every five minutes: a cancel seen within the test's wait came
by notification."""
BY_HEARTBEAT = {**HOOKS, "LOCK_DURATION": 10, "LOCK_RENEW_INTERVAL": 1}

HANDLERS = {"async": async_stuck, "checks": checks_for_cancel, "stuck": stuck}


def state(job_id: int) -> str | None:
    outcome = JobOutcome.objects.filter(job_id=job_id).first()
    if outcome is not None:
        return outcome.state
    runtime = JobRuntime.objects.filter(job_id=job_id).first()
    return runtime.state if runtime is not None else None


def started(job_id: int) -> bool:
    return RunRecord.objects.filter(job_id=job_id).exists()


def cancel_unheard(job_id: int, wait_until) -> None:
    """Cut the worker's LISTEN connection and cancel in a transaction that
    sees no listener session: its notification reaches no worker."""

    def cut_then_cancel() -> bool:
        if cut_connections("workhorse-listener") != 1:
            return False
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND application_name LIKE 'workhorse-listener %%'"
            )
            if cursor.fetchone()[0]:
                transaction.set_rollback(True)
                return False  # it came back already: cut again
            assert Admin().cancel(job_id, reason="not heard", by="ops").status == "requested"
        return True

    wait_until(cut_then_cancel, timeout=30, what="a cancel committed with no listener")


def max_overlap(label: str) -> int:
    """The most runs of ``label`` that were running at one instant."""
    runs = RunRecord.objects.filter(label=label)
    edges = sorted(
        [(r.started_at, 1) for r in runs] + [(r.finished_at, -1) for r in runs],
        key=lambda edge: (edge[0], edge[1]),
    )
    level = peak = 0
    for _, step in edges:
        level += step
        peak = max(peak, level)
    return peak


def assert_canceled_once(job_id: int, reason: str) -> None:
    outcome = JobOutcome.objects.get(job_id=job_id)
    assert outcome.state == "canceled" and outcome.error["reason"] == reason
    attempts = AttemptHistory.objects.filter(job_id=job_id)
    assert [(a.attempt, a.outcome) for a in attempts] == [(1, "canceled")]
    assert RunRecord.objects.filter(job_id=job_id).count() == 1  # never run again
    hooked = FailureCall.objects.filter(job_id=job_id)
    # The hook runs after the outcome is written: wait for its record.
    poll_until(hooked.exists, timeout=30, interval=0.05, what="ON_JOB_CANCELED to be called")
    assert [(c.hook, c.exception_message) for c in hooked] == [("record_canceled", reason)]


def database_now():
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]


def cancel_then_end(job_id: int) -> tuple:
    """When the cancel was asked (its event) and when the job ended canceled."""
    asked = JobEvent.objects.get(job_id=job_id, kind="cancel_requested").at
    return asked, JobOutcome.objects.get(job_id=job_id).finished_at


def assert_says_who_and_when(job_id: int, asked) -> None:
    """The worker's ack carries the cancel request's by and at."""
    error = JobOutcome.objects.get(job_id=job_id).error
    assert error["type"] == "django_workhorse.exceptions.JobCancelled"
    assert (error["by"], datetime.fromisoformat(error["at"])) == ("ops", asked)


def assert_slots_right(kind: str, wait_until) -> None:
    """Both slots free again, or, while a stuck thread holds one, exactly one."""
    if kind == "stuck":
        ids = [h.id for h in short_sleep.enqueue_many([{"seconds": 0.3, "label": "after"}] * 4)]
        wait_until(
            lambda: JobOutcome.objects.filter(job_id__in=ids, state="succeeded").count() == 4,
            timeout=60,
            what="the other slot to run four jobs",
        )
        assert max_overlap("after") == 1  # the stuck thread still holds its slot
    else:
        ids = [h.id for h in rendezvous.enqueue_many([{"label": "pair", "parties": 2}] * 2)]
        wait_until(
            lambda: JobOutcome.objects.filter(job_id__in=ids).count() == 2,
            timeout=90,
            what="two runs that need both slots at once",
        )
        assert set(JobOutcome.objects.filter(job_id__in=ids).values_list("state", flat=True)) == {
            "succeeded"
        }


@pytest.mark.parametrize("kind", sorted(HANDLERS))
def test_a_cancel_told_by_notification_ends_the_running_job_canceled(
    kind, start_worker, wait_until
):
    before_start = database_now()
    worker = start_worker(*QUEUE, settings=BY_NOTIFICATION)
    job = HANDLERS[kind].enqueue()
    wait_until(lambda: started(job.id), timeout=30, what="the handler to start")

    assert Admin().cancel(job.id, reason="by notification", by="ops").status == "requested"

    wait_until(lambda: state(job.id) == "canceled", timeout=60, what="the job to end canceled")
    assert_canceled_once(job.id, "by notification")
    # The worker's heartbeat renews for the first time LOCK_RENEW_INTERVAL
    # after it started: the job ended before any heartbeat could have told
    # its worker, so the notification did.
    asked, ended = cancel_then_end(job.id)
    assert_says_who_and_when(job.id, asked)
    first_beat = before_start + timedelta(seconds=BY_NOTIFICATION["LOCK_RENEW_INTERVAL"])
    assert before_start < asked <= ended < first_beat
    assert ended - asked < timedelta(seconds=1)
    assert_slots_right(kind, wait_until)
    assert worker.stop() == 0
    assert "cancel requested (told by a notification)" in worker.stderr


@pytest.mark.parametrize("kind", sorted(HANDLERS))
def test_a_cancel_told_by_the_heartbeat_ends_the_running_job_canceled(
    kind, start_worker, wait_until
):
    worker = start_worker(*QUEUE, settings=BY_HEARTBEAT)
    job = HANDLERS[kind].enqueue()
    wait_until(lambda: started(job.id), timeout=30, what="the handler to start")

    cancel_unheard(job.id, wait_until)

    wait_until(lambda: state(job.id) == "canceled", timeout=60, what="the job to end canceled")
    assert_canceled_once(job.id, "not heard")
    asked, ended = cancel_then_end(job.id)
    assert asked <= ended
    assert ended - asked < timedelta(seconds=BY_HEARTBEAT["LOCK_RENEW_INTERVAL"] + 1)
    assert_says_who_and_when(job.id, asked)
    assert_slots_right(kind, wait_until)
    assert worker.stop() == 0
    assert "cancel requested (told by the heartbeat)" in worker.stderr


def test_a_cancel_during_shutdown_ends_the_job_canceled_not_ready(start_worker, wait_until):
    worker = start_worker(*QUEUE, settings={**BY_NOTIFICATION, "SHUTDOWN_GRACE": 600})
    job = stuck.enqueue()
    wait_until(lambda: started(job.id), timeout=30, what="the handler to start")
    worker.send(signal.SIGTERM)
    wait_until(lambda: "SIGTERM received" in worker.stderr, timeout=30, what="the drain to begin")

    assert Admin().cancel(job.id, reason="stop it").status == "requested"

    # The worker exits long before its grace period: nothing runs any more.
    assert worker.wait_exit(120) == 0
    assert state(job.id) == "canceled"
    assert_canceled_once(job.id, "stop it")


def test_a_cancel_unheard_at_shutdown_ends_the_job_canceled_at_its_release(
    start_worker, wait_until
):
    worker = start_worker(*QUEUE, settings={**BY_NOTIFICATION, "SHUTDOWN_GRACE": 1})
    job = checks_for_cancel.enqueue()
    wait_until(lambda: started(job.id), timeout=30, what="the handler to start")
    cancel_unheard(job.id, wait_until)

    worker.send(signal.SIGTERM)

    assert worker.wait_exit(60) == 0
    assert state(job.id) == "canceled"
    assert "1 running job(s) ended canceled at shutdown" in worker.stderr
    assert "released 0 running job(s)" not in worker.stderr
    assert_canceled_once(job.id, "not heard")


def test_a_sync_handler_raising_job_cancelled_ends_its_job_canceled_not_failed(
    start_worker, wait_until
):
    worker = start_worker(*QUEUE, settings=HOOKS)
    job = cancels_itself.enqueue()

    wait_until(lambda: state(job.id) == "canceled", timeout=30, what="the job to end canceled")
    assert worker.stop() == 0
    attempts = AttemptHistory.objects.filter(job_id=job.id)
    assert [(a.attempt, a.outcome) for a in attempts] == [(1, "canceled")]
    assert JobOutcome.objects.get(job_id=job.id).error["message"] == "nothing left to do"
    hooked = FailureCall.objects.filter(job_id=job.id)
    assert [(c.hook, c.exception_message) for c in hooked] == [("record_canceled", "")]


def test_a_flagged_job_whose_worker_died_ends_canceled_at_its_recovery(start_worker, wait_until):
    settings = {**HOOKS, "LOCK_DURATION": 2, "STALLED_INTERVAL": 0.5}
    frozen = start_worker(*QUEUE, settings=settings, name="frozen")
    job = stuck.enqueue()
    wait_until(lambda: started(job.id), timeout=30, what="the handler to start")
    frozen.send(signal.SIGSTOP)  # it hears nothing of the cancel
    assert Admin().cancel(job.id, reason="worker frozen").status == "requested"
    # SIGKILL while stopped: kill() would send SIGCONT first, and the worker,
    # running again for a moment, could still hear the cancel and ack it.
    frozen.send(signal.SIGKILL)
    frozen.wait_exit(10)

    survivor = start_worker(*QUEUE, settings=settings, name="survivor")

    wait_until(lambda: state(job.id) == "canceled", timeout=60, what="the recovery")
    assert survivor.stop() == 0
    attempts = AttemptHistory.objects.filter(job_id=job.id)
    assert [(a.attempt, a.outcome) for a in attempts] == [(1, "stalled")]
    assert RunRecord.objects.filter(job_id=job.id).count() == 1
    hooked = FailureCall.objects.filter(job_id=job.id)
    # ON_JOB_CANCELED hears the operator's reason, read back from the envelope.
    assert [(c.hook, c.exception_message) for c in hooked] == [("record_canceled", "worker frozen")]
    assert "its cancel was requested and its worker stopped renewing the lease" in (survivor.stderr)
