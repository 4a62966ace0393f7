"""A stored payload that no longer fits its handler fails the attempt, once."""

from __future__ import annotations

import pytest
from django.db import connection
from jobtests.models import RunRecord

from django_workhorse.models import AttemptHistory, JobOutcome

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def test_a_payload_that_no_longer_fits_the_handler_fails_without_retry(start_worker, wait_until):
    # As if the handler's signature changed after the job was enqueued: the
    # SQL function stores what it is given, the Python check is bypassed.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT job_id FROM workhorse_enqueue_v1("
            "'jobtests.jobs.record', 'jobtests.record', '{\"renamed\": 1}'::jsonb, 5)"
        )
        (job_id,) = cursor.fetchone()
    worker = start_worker("--queues", "jobtests.record")

    outcome = wait_until(
        lambda: JobOutcome.objects.filter(job_id=job_id).first(), what="the job terminal"
    )
    assert worker.stop() == 0

    assert (outcome.state, outcome.attempts) == ("failed", 1)
    assert outcome.error["type"] == "django_workhorse.exceptions.InvalidPayloadError"
    assert "unexpected keyword argument 'renamed'" in outcome.error["message"]
    assert "no longer fits the handler" in outcome.error["message"]
    assert not RunRecord.objects.filter(job_id=job_id).exists()
    assert list(AttemptHistory.objects.filter(job_id=job_id).values_list("outcome")) == [
        ("failed",)
    ]
