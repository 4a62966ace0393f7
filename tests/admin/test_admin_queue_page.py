"""The queues page as docs/admin.md describes it: the per-worker concurrency
from settings, the global limits in words, the last slot of a schedule
linked to its job, and acting on queues under the queues' own permission."""

from __future__ import annotations

import pytest
from django.db import connection

from django_workhorse import Admin
from django_workhorse.schedules import Schedule, sync
from django_workhorse.worker.scheduler import sweep
from tests.admin.conftest import _staff
from tests.factories import FailedJobFactory, ReadyJobFactory

pytestmark = pytest.mark.django_db

QUEUES = "/admin/django_workhorse/queue/"
JOBS = "/admin/django_workhorse/job/"


def queue_row(body: str, queue: str) -> str:
    return body[body.index(f'id="wh-queue-{queue}"') :].split("</tr>")[0]


def test_the_queues_page_shows_the_per_worker_concurrency_of_workhorse_queues(
    operator_client, settings
):
    settings.WORKHORSE = {**settings.WORKHORSE, "QUEUES": {"page-conc": {"concurrency": 7}}}
    ReadyJobFactory(queue="page-conc")

    response = operator_client.get(QUEUES)

    row = next(r for r in response.context["rows"] if r["stats"].name == "page-conc")
    assert row["concurrency"] == 7
    assert "<td>7</td>" in queue_row(response.content.decode(), "page-conc")


def test_the_queues_page_says_a_rate_limit_per_its_period(operator_client):
    ReadyJobFactory(queue="page-rate")
    Admin().set_queue_limits("page-rate", concurrency=2, rate=100, period=60)

    body = operator_client.get(QUEUES).content.decode()

    assert "2 at once, 100 per 1 min 0 s" in queue_row(body, "page-rate")


def test_the_queues_page_links_a_schedules_last_slot_to_its_job(operator_client):
    with connection.cursor() as cursor:
        sync(cursor, [Schedule("page-slot", "jobtests.jobs.record", "* * * * *", "UTC")])
        # Plan a slot in the past, then sweep: the slot is enqueued.
        cursor.execute(
            "UPDATE workhorse_schedule SET next_run_at = now() - interval '1 minute'"
            " WHERE name = 'page-slot'"
        )
        sweep(cursor)
    (row,) = [s for s in Admin().list_schedules() if s.name == "page-slot"]
    assert row.last_job_id is not None

    body = operator_client.get(QUEUES).content.decode()

    schedule = body[body.index('id="wh-schedule-page-slot"') :].split("</tr>")[0]
    assert f'href="{JOBS}{row.last_job_id}/">#{row.last_job_id}</a>' in schedule


def test_pausing_a_queue_needs_the_change_permission_on_queues(client, django_user_model):
    """The change permission on jobs lets a user retry jobs, not pause queues."""
    user = _staff(django_user_model, "jobs-only", ["view_job", "change_job", "view_queue"])
    client.force_login(user)
    ReadyJobFactory(queue="page-perm")

    page = client.get(QUEUES)
    forged = client.post(f"{QUEUES}act/", {"action": "pause", "queue": "page-perm"})

    assert page.status_code == 200 and 'value="pause"' not in page.content.decode()
    assert forged.status_code == 403
    assert not next(q for q in Admin().queue_stats() if q.name == "page-perm").paused


def test_retrying_a_job_needs_the_change_permission_on_jobs(client, django_user_model):
    """The change permission on queues lets a user pause queues, not retry jobs."""
    user = _staff(django_user_model, "queues-only", ["view_job", "view_queue", "change_queue"])
    client.force_login(user)
    job = FailedJobFactory(queue="page-perm-jobs")

    page = client.get(f"{JOBS}{job.id}/")
    forged = client.post(f"{JOBS}{job.id}/act/", {"action": "retry"})
    paused = client.post(f"{QUEUES}act/", {"action": "pause", "queue": "page-perm-jobs"})

    assert page.status_code == 200 and 'value="retry"' not in page.content.decode()
    assert forged.status_code == 403
    assert Admin().get_job(job.id).state == "failed"
    assert paused.status_code == 302
    assert next(q for q in Admin().queue_stats() if q.name == "page-perm-jobs").paused


def test_a_user_without_the_view_permission_on_queues_cannot_open_the_queues_page(
    client, django_user_model
):
    user = _staff(django_user_model, "jobs-viewer", ["view_job"])
    client.force_login(user)

    assert client.get(QUEUES).status_code == 403
    assert client.get(JOBS).status_code == 200
