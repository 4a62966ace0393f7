"""``WORKHORSE["JOB_OPTIONS"]`` gives a job or task the project did not
write the options its decorator would: by import path or name, over the
decorator's values, under the per-enqueue choices. ``searchlib`` is a
third-party package (testproject/searchlib, shaped like Wagtail's
``modelsearch``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ObjectDoesNotExist
from django.test import override_settings
from searchlib.jobs import rebuild_index
from searchlib.tasks import index_object

from django_workhorse.models import Job
from django_workhorse.tasks.compat import default_task_backend
from django_workhorse.worker.outcomes import retry_decision

pytestmark = pytest.mark.django_db

TASK = "searchlib.tasks.index_object"
GIVEN = {
    "queue": "search",
    "priority": 7,
    "max_attempts": 1,
    "timeout": 30,
    "max_stalled": 2,
    "no_retry_on": ["django.core.exceptions.ObjectDoesNotExist"],
}


def stored(result_id: str | int) -> Job:
    """The job row."""
    return Job.objects.get(id=int(result_id))


@override_settings(WORKHORSE={"JOB_OPTIONS": {TASK: GIVEN}})
def test_a_third_party_tasks_options_are_set_by_its_import_path():
    job = stored(index_object.enqueue(1).id)
    assert (job.queue, job.priority, job.max_attempts, job.timeout, job.max_stalled) == (
        "search",
        7,
        1,
        timedelta(seconds=30),
        2,
    )


def test_without_the_setting_a_task_keeps_its_decorators_and_backends_options():
    job = stored(index_object.enqueue(1).id)
    assert (job.queue, job.priority, job.max_attempts) == ("default", 0, 3)


@override_settings(WORKHORSE={"JOB_OPTIONS": {TASK: GIVEN}})
def test_a_tasks_using_still_chooses_for_its_enqueue():
    job = stored(index_object.using(queue_name="shop", priority=-3).enqueue(1).id)
    assert (job.queue, job.priority, job.max_attempts) == ("shop", -3, 1)


REBUILD = {"searchlib.jobs.rebuild_index": {"max_attempts": 2, "queue": "search"}}


@override_settings(WORKHORSE={"JOB_OPTIONS": REBUILD})
def test_a_native_jobs_options_are_set_by_its_name():
    job = stored(rebuild_index.enqueue(name="pages").id)
    assert (job.queue, job.max_attempts) == ("search", 2)
    job = stored(rebuild_index.options(max_attempts=9).enqueue(name="pages").id)
    assert job.max_attempts == 9  # .options() is the enqueue's own choice


def test_no_retry_on_from_the_setting_ends_a_failure_with_that_exception():
    definition = default_task_backend.definition_for(index_object)
    assert retry_decision(definition, ObjectDoesNotExist("gone"), 1).retryable
    with override_settings(WORKHORSE={"JOB_OPTIONS": {TASK: GIVEN}}):
        assert not retry_decision(definition, ObjectDoesNotExist("gone"), 1).retryable
        assert retry_decision(definition, ConnectionError("flaky"), 1).retryable


def test_retry_on_from_the_setting_narrows_the_retries():
    definition = default_task_backend.definition_for(index_object)
    with override_settings(WORKHORSE={"JOB_OPTIONS": {TASK: {"retry_on": [ConnectionError]}}}):
        assert retry_decision(definition, ConnectionError("flaky"), 1).retryable
        assert not retry_decision(definition, ObjectDoesNotExist("gone"), 1).retryable


def test_the_decorators_no_retry_on_ends_a_failure_with_that_exception():
    from django_workhorse import job

    @job(name="tests.no_retry_on", no_retry_on=KeyError)
    def handler() -> None: ...

    assert not retry_decision(handler, KeyError("k"), 1).retryable
    assert retry_decision(handler, ValueError("v"), 1).retryable
