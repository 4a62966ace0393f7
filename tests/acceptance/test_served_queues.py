"""The queues of the Tasks backend are the worker's queues, and ``run_jobs``
serves what ``runworker`` serves (docs/worker.md, ``--queues``)."""

from __future__ import annotations

import pytest
from jobtests.jobs import record
from jobtests.tasks import add

import django_workhorse as workhorse
from django_workhorse.testing import run_jobs

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

TASKS_ONLY = "jobtests.tasks-listed"
"""Named in testproject's TASKS["default"]["QUEUES"] and by no task or job."""


def test_runworker_serves_a_queue_named_only_in_the_tasks_backend(start_worker):
    result = add.using(queue_name=TASKS_ONLY).enqueue(2, 3)

    worker = start_worker("--queues", TASKS_ONLY, "--burst", ready=False)

    assert worker.wait_exit(60) == 0, worker.stderr
    assert workhorse.Admin().get_job(int(result.id)).state == "succeeded"


def test_run_jobs_serves_the_queues_runworker_serves():
    result = add.using(queue_name=TASKS_ONLY).enqueue(2, 3)

    run_jobs(queues=[TASKS_ONLY])

    assert workhorse.Admin().get_job(int(result.id)).state == "succeeded"


def test_run_jobs_serves_a_queue_no_known_job_uses_and_says_so_as_runworker_does(caplog):
    # runworker's side: tests/acceptance/test_unserved_queues.py.
    handle = record.options(queue="jobtests.nowhere").enqueue()

    run_jobs(queues=["jobtests.nowhere"])

    assert workhorse.Admin().get_job(handle.id).state == "succeeded"
    assert "serving queue(s) jobtests.nowhere as told" in caplog.text
