"""The queues page as docs/admin.md describes it: the per-worker concurrency
from settings, the global limits in words, the last slot of a schedule
linked to its job, live counts stopping at 1,000, the oldest ready age, the
last hour's throughput chart, and acting on queues under the queues' own
permission."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from demo.jobs import add
from django.db import connection
from django.utils import timezone

from django_workhorse import Admin
from django_workhorse.core.schedules import Schedule, sync
from django_workhorse.worker.scheduler import sweep
from tests.admin.conftest import _staff
from tests.factories import FailedJobFactory, ReadyJobFactory, SucceededJobFactory

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
    Admin().set_queue_limits("page-rate", global_concurrency=2, rate=100, period=60)

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


def test_the_queues_page_shows_a_live_count_past_1000_as_1000_plus(operator_client):
    add.options(queue="page-deep").enqueue_many([{"a": n, "b": 0} for n in range(1001)])

    response = operator_client.get(QUEUES)

    row = next(r for r in response.context["rows"] if r["stats"].name == "page-deep")
    assert row["stats"].capped == {"ready"}
    assert '<td class="wh-num">1,000+</td>' in queue_row(response.content.decode(), "page-deep")


def test_the_queues_page_shows_how_long_the_oldest_ready_job_has_waited(operator_client):
    add.options(
        queue="page-oldest", run_at=timezone.now() - timedelta(hours=2, seconds=30)
    ).enqueue(a=1, b=2)
    ReadyJobFactory(queue="page-oldest")

    body = operator_client.get(QUEUES).content.decode()

    assert '<td class="wh-nowrap">2 h 0 min</td>' in queue_row(body, "page-oldest")


def test_the_queues_page_charts_the_jobs_finished_in_the_last_hour(operator_client):
    SucceededJobFactory(queue="page-chart")
    SucceededJobFactory(queue="page-chart")

    body = operator_client.get(QUEUES).content.decode()

    chart = queue_row(body, "page-chart").split("<svg")[1].split("</svg>")[0]
    assert "2 finished in the last hour" in chart
    bars = re.findall(r'<rect [^>]*height="([\d.]+)"[^>]*><title>(\d+)</title>', chart)
    assert len(bars) == 12  # 5-minute slices
    assert bars[-1] == ("28.0", "2")  # the latest slice, at full height
    assert {n for _, n in bars[:-1]} == {"0"}


def test_a_queue_reads_running_only_when_a_live_worker_says_it_serves_it(operator_client):
    import json

    from django_workhorse.db import store
    from django_workhorse.worker.presence import describe_worker

    ReadyJobFactory(queue="page-served")
    ReadyJobFactory(queue="page-unserved")
    info = describe_worker("host-q:1:abc", {"page-served": 2}, 0, 15.0, "batched")
    with connection.cursor() as cursor:
        store.heartbeat_many(cursor, "host-q:1:abc", [], [], 30, json.dumps(info))

    body = operator_client.get(QUEUES).content.decode()

    assert "running" in queue_row(body, "page-served")
    assert "no worker" not in queue_row(body, "page-served")
    assert "no worker" in queue_row(body, "page-unserved")


def test_a_queue_whose_only_worker_went_silent_reads_no_worker(operator_client):
    import json

    from django_workhorse.db import store
    from django_workhorse.worker.presence import describe_worker

    ReadyJobFactory(queue="page-orphaned")
    info = describe_worker("host-q:2:dead", {"page-orphaned": 2}, 0, 15.0, "batched")
    with connection.cursor() as cursor:
        store.heartbeat_many(cursor, "host-q:2:dead", [], [], 30, json.dumps(info))
        # Not heard from for longer than three renew intervals (plus 5 s).
        cursor.execute(
            "UPDATE workhorse_worker SET last_seen_at = now() - interval '2 minutes'"
            " WHERE worker_id = 'host-q:2:dead'"
        )

    body = operator_client.get(QUEUES).content.decode()

    assert "no worker" in queue_row(body, "page-orphaned")
    assert "running" not in queue_row(body, "page-orphaned")
