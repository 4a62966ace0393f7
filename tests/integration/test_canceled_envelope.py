"""Every path that ends a job canceled names the same exception in its
envelope: ``django_workhorse.exceptions.JobCancelled``, the dotted path the
worker's ack writes (``error_envelope``) and the one the Django Tasks
backend hands on as ``exception_class_path``."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from django.utils.module_loading import import_string

from django_workhorse import Admin, JobCanceledError
from django_workhorse.db import store
from django_workhorse.worker.outcomes import error_envelope
from tests.factories import ActiveJobFactory, BlockedJobFactory, ReadyJobFactory

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])

DOTTED = "django_workhorse.exceptions.JobCancelled"


def acked_by_the_worker(cursor) -> int:
    job = ActiveJobFactory()
    Admin().cancel(job.id, reason="stop", by="ops")
    envelope = error_envelope(JobCanceledError(f"job {job.id} was canceled by an operator"))
    store.fail_many(
        cursor,
        job.worker,
        [job.id],
        [job.fence],
        [json.dumps(envelope)],
        ["canceled"],
        [False],
        [None],
    )
    return job.id


def failed_before_the_worker_heard(cursor) -> int:
    """The run failed with attempts left after the cancel was asked, before
    its worker heard of it: not retried, the job ends canceled."""
    job = ActiveJobFactory(max_attempts=5)
    Admin().cancel(job.id, reason="stop", by="ops")
    failure = json.dumps({"type": "ValueError", "message": "bad", "traceback": "..."})
    (result,) = store.fail_many(
        cursor, job.worker, [job.id], [job.fence], [failure], ["failed"], [True], [None]
    )
    assert (result.ok, result.will_retry, result.canceled) == (True, False, True)
    return job.id


def timed_out_before_the_worker_heard(cursor) -> int:
    job = ActiveJobFactory(max_attempts=5)
    Admin().cancel(job.id, reason="stop", by="ops")
    timeout = json.dumps({"type": "TimeoutError", "message": "ran past its timeout"})
    store.fail_many(
        cursor, job.worker, [job.id], [job.fence], [timeout], ["timed_out"], [True], [None]
    )
    return job.id


def released_at_shutdown(cursor) -> int:
    job = ActiveJobFactory()
    Admin().cancel(job.id, reason="stop", by="ops")
    store.release_many(cursor, job.worker, [job.id], [job.fence])
    return job.id


def put_to_sleep(cursor) -> int:
    job = ActiveJobFactory()
    Admin().cancel(job.id, reason="stop", by="ops")
    store.sleep_many(cursor, job.worker, [job.id], [job.fence], ["nap"], [None], [60.0])
    return job.id


def recovered_after_a_crash(cursor) -> int:
    job = ActiveJobFactory(lease_seconds=0)
    Admin().cancel(job.id, reason="stop", by="ops")
    store.recover_stalled(cursor)
    return job.id


def settled_by_a_prerequisite(cursor) -> int:
    first = ActiveJobFactory()
    dependent = BlockedJobFactory(depends_on=[first.id])
    failure = json.dumps({"type": "ValueError", "message": "bad"})
    store.fail_many(
        cursor, first.worker, [first.id], [first.fence], [failure], ["failed"], [False], [None]
    )
    return dependent.id


def canceled_while_waiting(cursor) -> int:
    job = ReadyJobFactory()
    Admin().cancel(job.id, reason="stop")
    return job.id


ENDS_OF_A_RUN = [
    acked_by_the_worker,
    failed_before_the_worker_heard,
    timed_out_before_the_worker_heard,
    released_at_shutdown,
    put_to_sleep,
    recovered_after_a_crash,
]
"""The paths that end a canceled job that was running."""


@pytest.mark.parametrize("end", [*ENDS_OF_A_RUN, settled_by_a_prerequisite, canceled_while_waiting])
def test_every_canceled_envelope_names_the_exception_by_its_dotted_path(end, cursor):
    job_id = end(cursor)

    job = Admin().get_job(job_id)
    assert job.state == "canceled"
    assert job.error["type"] == DOTTED
    assert import_string(job.error["type"]) is JobCanceledError


@pytest.mark.parametrize("end", ENDS_OF_A_RUN)
def test_a_run_canceled_while_active_says_why_who_and_when_on_every_path(end, cursor):
    """The reason, ``by`` and ``at`` of the operator's request come from its
    'cancel_requested' event, read by the SQL that ends the job."""
    job_id = end(cursor)

    error = Admin().get_job(job_id).error
    (requested,) = [
        e for e in Admin().get_job_timeline(job_id).items if e.kind == "cancel_requested"
    ]
    assert (error["reason"], error["by"]) == ("stop", "ops")
    assert datetime.fromisoformat(error["at"]) == requested.at


@pytest.mark.parametrize("end", [failed_before_the_worker_heard, timed_out_before_the_worker_heard])
def test_a_run_that_failed_before_its_cancel_was_heard_keeps_its_error_on_the_attempt(end, cursor):
    """The job's envelope is the cancel's, saying what the run did first; the
    run's own error stays on its attempt, as it was."""
    job_id = end(cursor)

    job = Admin().get_job(job_id)
    assert job.error["state_before"] == "active"
    assert "canceled by an operator" in job.error["message"]
    (attempt,) = [e for e in Admin().get_job_timeline(job_id).items if e.source == "attempt"]
    assert attempt.kind in ("failed", "timed_out")
    assert attempt.error["type"] in ("ValueError", "TimeoutError")
    assert attempt.error["type"].removesuffix("Error") in job.error["message"]
