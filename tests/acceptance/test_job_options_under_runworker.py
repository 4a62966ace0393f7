"""``WORKHORSE["JOB_OPTIONS"]`` under a real worker: a third-party task that
raises ``ObjectDoesNotExist`` for an object deleted before it ran is not
retried (docs/django-tasks.md, the Wagtail example)."""

from __future__ import annotations

import pytest
from django.test import override_settings
from searchlib.tasks import index_object

from django_workhorse import Admin

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

SETTINGS = {
    "JOB_OPTIONS": {
        "searchlib.tasks.index_object": {
            "no_retry_on": ["django.core.exceptions.ObjectDoesNotExist"],
        }
    }
}


def test_a_deleted_object_fails_its_third_party_task_without_a_retry(start_worker, wait_until):
    with override_settings(WORKHORSE=SETTINGS):
        gone = index_object.enqueue(-1)
    worker = start_worker("--queues", "default", settings=SETTINGS)
    job = wait_until(
        lambda: (j := Admin().get_job(int(gone.id))) and j.state == "failed" and j,
        what="the task failed",
    )
    assert worker.stop() == 0
    assert (job.current_attempt, job.max_attempts) == (1, 3)  # TASKS OPTIONS: MAX_ATTEMPTS 3
    assert "ObjectDoesNotExist" in str(job.error)
