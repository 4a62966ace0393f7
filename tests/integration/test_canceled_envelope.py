"""Every path that ends a job canceled names the same exception in its
envelope: ``django_workhorse.exceptions.JobCancelled``, the dotted path the
worker's ack writes (``error_envelope``) and the one the Django Tasks
backend hands on as ``exception_class_path``."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from django.utils.module_loading import import_string

from django_workhorse import Admin, JobCancelled, store
from django_workhorse.worker.failures import error_envelope
from tests.factories import ActiveJobFactory, BlockedJobFactory, ReadyJobFactory

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])

DOTTED = "django_workhorse.exceptions.JobCancelled"


def acked_by_the_worker(cursor) -> int:
    job = ActiveJobFactory()
    Admin().cancel(job.id, reason="stop", by="ops")
    envelope = error_envelope(JobCancelled(f"job {job.id} was canceled by an operator"))
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


@pytest.mark.parametrize(
    "end",
    [
        acked_by_the_worker,
        released_at_shutdown,
        put_to_sleep,
        recovered_after_a_crash,
        settled_by_a_prerequisite,
        canceled_while_waiting,
    ],
)
def test_every_canceled_envelope_names_the_exception_by_its_dotted_path(end, cursor):
    job_id = end(cursor)

    job = Admin().get_job(job_id)
    assert job.state == "canceled"
    assert job.error["type"] == DOTTED
    assert import_string(job.error["type"]) is JobCancelled


@pytest.mark.parametrize(
    "end", [acked_by_the_worker, released_at_shutdown, put_to_sleep, recovered_after_a_crash]
)
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
