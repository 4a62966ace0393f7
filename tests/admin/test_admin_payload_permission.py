"""What jobs carry (payloads, results, checkpoint results, error messages,
tracebacks and event details) is shown only to holders of
``django_workhorse.view_job_payload``; a user who may only view jobs sees
their states, times and error types (docs/security.md)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from tests.factories import jobs_holding

pytestmark = pytest.mark.django_db

JOBS = "/admin/django_workhorse/job/"
SECRET = "alice@example.com"


def secret_jobs() -> list[int]:
    return jobs_holding(SECRET)


def test_migrate_creates_the_payload_permission():
    permission = Permission.objects.get(
        content_type__app_label="django_workhorse", codename="view_job_payload"
    )
    assert permission.name == "Can see job payloads, results and errors"


def test_a_user_without_the_payload_permission_sees_states_and_error_types_only(
    support_client,
):
    jobs = secret_jobs()

    for job_id in jobs:
        body = support_client.get(f"{JOBS}{job_id}/").content.decode()
        assert SECRET not in body, f"job {job_id}'s page shows what the job carries"
        assert 'id="wh-payload-hidden"' in body and 'id="wh-state"' in body
    failed_page = support_client.get(f"{JOBS}{jobs[0]}/").content.decode()
    assert "builtins.ValueError" in failed_page
    listing = support_client.get(JOBS, {"queue": "private"}).content.decode()
    assert SECRET not in listing and str(jobs[0]) in listing


def test_a_holder_of_the_payload_permission_sees_what_the_jobs_carry(operator_client):
    failed, succeeded, canceled = secret_jobs()

    for job_id in (failed, succeeded, canceled):
        body = operator_client.get(f"{JOBS}{job_id}/").content.decode()
        assert SECRET in body
        assert 'id="wh-payload-hidden"' not in body
