"""The Django admin pages: job list, job page with its timeline, queues
dashboard, and the actions, through Django's test client."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from demo.jobs import add
from django.contrib.messages import get_messages
from django.db import connection
from django.test.utils import CaptureQueriesContext

from django_workhorse import Admin
from django_workhorse.admin import base as admin_module
from django_workhorse.admin import queues as admin_queues
from django_workhorse.db import store
from django_workhorse.worker.presence import describe_worker
from tests.factories import (
    ActiveJobFactory,
    BlockedJobFactory,
    FailedJobFactory,
    ReadyJobFactory,
    ScheduledJobFactory,
    SucceededJobFactory,
)

pytestmark = pytest.mark.django_db

JOBS = "/admin/django_workhorse/job/"
QUEUES = "/admin/django_workhorse/queue/"


def texts(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_the_job_list_shows_state_attempt_and_no_count_query(operator_client):
    failed = FailedJobFactory(queue="page-list")  # before the ready one: its claim takes any
    ready = ReadyJobFactory(queue="page-list")

    with CaptureQueriesContext(connection) as queries:
        response = operator_client.get(JOBS, {"queue": "page-list"})

    assert response.status_code == 200
    body = response.content.decode()
    assert f">{failed.id}</a>" in body and f">{ready.id}</a>" in body
    assert 'class="wh-badge wh-failed"' in body and "1 / 3" in body
    assert not any("count(" in q["sql"].lower() for q in queries.captured_queries)


def test_the_job_list_filters_by_state_and_pages_older_and_newer(operator_client):
    FailedJobFactory(queue="page-pages")
    ids = [ReadyJobFactory(queue="page-pages").id for _ in range(55)]

    first = operator_client.get(JOBS, {"queue": "page-pages", "state": "ready"})
    assert first.context["page"].items[0].id == ids[-1]
    assert len(first.context["page"].items) == 50
    older = operator_client.get(JOBS + first.context["older_url"])
    assert [j.id for j in older.context["page"].items] == ids[:5][::-1]
    newer = operator_client.get(JOBS + older.context["newer_url"])
    assert newer.context["page"].items[0].id == ids[-1]


def test_a_search_that_is_no_job_id_looks_for_an_idempotency_key(operator_client):
    keyed = ReadyJobFactory(idempotency_key="99999999999999999999")
    response = operator_client.get(JOBS, {"q": "99999999999999999999"})
    assert [j.id for j in response.context["page"].items] == [keyed.id]


def test_a_search_of_a_number_beyond_any_job_id_looks_for_an_idempotency_key(operator_client):
    """Bug: a 19-digit number above the largest id got "is not a job id" and
    no search at all."""
    keyed = ReadyJobFactory(idempotency_key="9999999999999999999")
    response = operator_client.get(JOBS, {"q": "9999999999999999999"})
    assert texts(response) == []
    assert [j.id for j in response.context["page"].items] == [keyed.id]


def test_a_blank_search_lists_every_job(operator_client):
    """Bug: a search of spaces became the idempotency key '' and an error message."""
    job = ReadyJobFactory(queue="page-blank-search")
    response = operator_client.get(JOBS, {"q": "   ", "queue": "page-blank-search"})
    assert texts(response) == []
    assert [j.id for j in response.context["page"].items] == [job.id]


def test_searching_a_job_id_opens_its_page(operator_client):
    job = ReadyJobFactory()
    response = operator_client.get(JOBS, {"q": str(job.id)})
    assert response.status_code == 302 and response.url.endswith(f"/job/{job.id}/")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"cursor": "garbage"}, "first page"),
        ({"state": "bogus"}, "state must be one of"),
        ({"queue": "\x00"}, "is not a queue name"),
        ({"name": "a b"}, "is not a job name"),
        ({"q": "\x00"}, "idempotency key"),
    ],
)
def test_bad_list_input_gets_a_message_not_a_server_error(operator_client, query, message):
    response = operator_client.get(JOBS, query)
    assert response.status_code == 200
    assert any(message in text for text in texts(response)), texts(response)


@pytest.mark.parametrize(
    "path",
    [
        "abc/",
        "abc/change/",
        "0/",
        "-1/",
        "99999999999999999999/",
        "123456789/",
        "%00/",
        "1.5/change/",
        "\uff11\uff12/",  # full-width digits: isdigit() but not an id
    ],
)
def test_a_malformed_or_unknown_job_id_is_a_404(operator_client, path):
    assert operator_client.get(JOBS + path).status_code == 404


def test_the_job_page_shows_payload_error_traceback_and_timeline(operator_client):
    job = FailedJobFactory(
        payload={"a": 40, "b": 2},
        error={
            "type": "ValueError",
            "message": "boom",
            "traceback": "Traceback...\nValueError: boom",
        },
    )

    response = operator_client.get(f"{JOBS}{job.id}/")

    body = response.content.decode()
    assert response.status_code == 200
    assert "&quot;a&quot;: 40" in body
    assert "ValueError: boom" in body
    assert "attempt 1 failed" in body
    # One test transaction: every row has the same now(), so only the set is checked here
    # (tests/integration/test_admin_api.py checks the order with real transactions).
    assert sorted(e["entry"].kind for e in response.context["entries"]) == [
        "claimed",
        "enqueued",
        "failed",
        "failed",
    ]
    assert 'value="retry"' in body and 'value="cancel"' not in body


def test_the_job_page_shows_prerequisites_and_dependents_with_their_states(operator_client):
    first, second = SucceededJobFactory(), ActiveJobFactory()
    blocked = BlockedJobFactory(depends_on=[first.id, second.id])

    dependent_page = operator_client.get(f"{JOBS}{blocked.id}/").content.decode()
    prerequisite_page = operator_client.get(f"{JOBS}{second.id}/").content.decode()

    assert "Policy <strong>all_succeeded</strong>: waiting for 1 of 2 prerequisites" in (
        dependent_page
    )
    prerequisites = dependent_page.split('id="wh-prerequisites"')[1].split("</ul>")[0]
    assert f'href="{JOBS}{first.id}/"' in prerequisites and "wh-succeeded" in prerequisites
    assert f'href="{JOBS}{second.id}/"' in prerequisites and "wh-active" in prerequisites
    dependents = prerequisite_page.split('id="wh-dependents"')[1].split("</ul>")[0]
    assert f'href="{JOBS}{blocked.id}/"' in dependents and "wh-blocked" in dependents


def test_the_job_page_shows_checkpoints_and_the_wake_time_of_a_sleeping_job(operator_client):
    job = ActiveJobFactory()
    with connection.cursor() as cursor:
        store.write_checkpoint(cursor, job.id, job.worker, job.fence, "charge", '{"paid": 42}')
        ((_, _, wake_at, _),) = store.sleep_many(
            cursor, job.worker, [job.id], [job.fence], ["cool-off"], [None], [3600]
        )

    response = operator_client.get(f"{JOBS}{job.id}/")

    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="wh-checkpoints"' in body
    assert "<td>charge</td><td>checkpoint</td>" in body
    assert "&quot;paid&quot;: 42" in body
    assert "<td>cool-off</td><td>sleep</td>" in body
    assert 'id="wh-sleeping-until"' in body
    assert response.context["job"].sleeping_until == wake_at


def test_a_job_without_checkpoints_shows_no_checkpoint_table(operator_client):
    job = SucceededJobFactory()
    response = operator_client.get(f"{JOBS}{job.id}/")
    assert 'id="wh-checkpoints"' not in response.content.decode()


def test_a_bad_timeline_cursor_gets_a_message_and_the_first_page(operator_client):
    job = SucceededJobFactory()
    response = operator_client.get(f"{JOBS}{job.id}/", {"timeline": "garbage"})
    assert response.status_code == 200
    assert any("first page" in t for t in texts(response))
    assert response.context["entries"]


@pytest.mark.parametrize(
    ("factory", "buttons"),
    [
        (ReadyJobFactory, ["cancel"]),
        (ScheduledJobFactory, ["cancel", "promote"]),
        (ActiveJobFactory, ["cancel"]),
        (SucceededJobFactory, []),
        (FailedJobFactory, ["retry"]),
    ],
)
def test_the_job_page_offers_the_buttons_its_state_allows(operator_client, factory, buttons):
    job = factory()
    response = operator_client.get(f"{JOBS}{job.id}/")
    assert sorted(response.context["job_actions"]) == buttons


def test_retry_from_the_job_page_reports_success_and_the_new_state(operator_client):
    job = FailedJobFactory()

    response = operator_client.post(f"{JOBS}{job.id}/act/", {"action": "retry"}, follow=True)

    assert response.status_code == 200
    assert any("ready to run again" in t for t in texts(response))
    assert response.context["job"].state == "ready"


def test_a_dependent_whose_policy_cannot_be_met_is_retried_ignoring_its_prerequisites(
    operator_client,
):
    dependent = BlockedJobFactory(depends_on=[FailedJobFactory().id])  # canceled at once
    page = operator_client.get(f"{JOBS}{dependent.id}/")
    assert page.context["job"].state == "canceled"
    assert page.context["job_buttons"] == [
        ("retry", "Retry"),
        ("retry_ignoring_dependencies", "Retry ignoring prerequisites"),
    ]

    refused = operator_client.post(f"{JOBS}{dependent.id}/act/", {"action": "retry"}, follow=True)
    assert any("'Retry ignoring prerequisites'" in t for t in texts(refused))
    assert refused.context["job"].state == "canceled"

    response = operator_client.post(
        f"{JOBS}{dependent.id}/act/", {"action": "retry_ignoring_dependencies"}, follow=True
    )
    assert any("ready to run again" in t for t in texts(response))
    assert response.context["job"].state == "ready"


def test_a_job_without_prerequisites_is_not_offered_the_retry_that_ignores_them(
    operator_client,
):
    job = FailedJobFactory()
    page = operator_client.get(f"{JOBS}{job.id}/")
    assert [name for name, _ in page.context["job_buttons"]] == ["retry"]


def test_cancel_of_a_running_job_from_the_admin_asks_its_worker(operator_client):
    job = ActiveJobFactory()
    response = operator_client.post(f"{JOBS}{job.id}/act/", {"action": "cancel"}, follow=True)
    assert any("its worker was asked to stop it" in t for t in texts(response))
    snapshot = Admin().get_job(job.id)
    assert (snapshot.state, snapshot.cancel_requested) == ("active", True)


def test_a_cancel_from_the_admin_records_the_operator(operator_client):
    ready, running, bulk = ReadyJobFactory(), ActiveJobFactory(), ReadyJobFactory()

    operator_client.post(f"{JOBS}{ready.id}/act/", {"action": "cancel"})
    operator_client.post(f"{JOBS}{running.id}/act/", {"action": "cancel"})
    operator_client.post(f"{JOBS}act/", {"action": "cancel", "job": [bulk.id]})

    assert Admin().get_job(ready.id).error["by"] == "operator"
    assert Admin().get_job(bulk.id).error["by"] == "operator"
    requested = [
        e for e in Admin().get_job_timeline(running.id).items if e.kind == "cancel_requested"
    ]
    assert [e.data["by"] for e in requested] == ["operator"]


def test_bulk_retry_and_cancel_act_where_the_state_allows(operator_client):
    failed, ready, done = FailedJobFactory(), ReadyJobFactory(), SucceededJobFactory()

    response = operator_client.post(
        f"{JOBS}act/", {"action": "cancel", "job": [ready.id, done.id]}, follow=True
    )
    messages = texts(response)
    assert any(f"1 job(s) canceled: #{ready.id}" in t for t in messages)
    assert any("already finished" in t for t in messages)
    operator_client.post(f"{JOBS}act/", {"action": "retry", "job": [failed.id, ready.id]})
    assert Admin().get_job(failed.id).state == "ready"
    assert Admin().get_job(ready.id).state == "ready"


def test_a_bulk_action_on_more_jobs_than_a_page_does_nothing_and_says_so(operator_client):
    ready = [ReadyJobFactory() for _ in range(admin_module.PAGE_SIZE + 1)]

    response = operator_client.post(
        f"{JOBS}act/", {"action": "cancel", "job": [j.id for j in ready]}, follow=True
    )

    assert any("nothing was done" in t for t in texts(response))
    assert {Admin().get_job(j.id).state for j in ready} == {"ready"}


def test_an_action_on_a_job_that_does_not_exist_lands_on_the_job_list_saying_so(
    operator_client,
):
    response = operator_client.post(f"{JOBS}987654321/act/", {"action": "cancel"}, follow=True)

    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == JOBS
    assert any("987654321" in t for t in texts(response))


@pytest.mark.parametrize("action", ["explode", ""])
def test_an_unknown_action_on_a_job_that_does_not_exist_lands_on_the_job_list(
    operator_client, action
):
    response = operator_client.post(f"{JOBS}987654321/act/", {"action": action}, follow=True)

    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == JOBS
    messages = texts(response)
    assert any("there is no job #987654321" in t for t in messages)
    assert any("unknown action" in t for t in messages)


def test_a_job_sent_twice_in_one_bulk_action_is_acted_on_and_reported_once(operator_client):
    ready = ReadyJobFactory()

    response = operator_client.post(
        f"{JOBS}act/", {"action": "cancel", "job": [ready.id, ready.id]}, follow=True
    )

    messages = texts(response)
    assert any(f"1 job(s) canceled: #{ready.id}" in t for t in messages)
    assert not any("already" in t for t in messages)


@pytest.mark.parametrize(
    "data",
    [{"action": "explode", "job": ["1"]}, {"action": "retry", "job": ["abc"]}, {"action": "retry"}],
)
def test_bad_bulk_input_gets_a_message(operator_client, data):
    response = operator_client.post(f"{JOBS}act/", data, follow=True)
    assert response.status_code == 200 and texts(response)


def test_actions_need_post(operator_client):
    job = FailedJobFactory()
    assert operator_client.get(f"{JOBS}{job.id}/act/").status_code == 405
    assert operator_client.get(f"{QUEUES}act/").status_code == 405


def test_a_view_only_user_sees_no_buttons_and_a_forged_post_is_forbidden(viewer_client):
    job = FailedJobFactory(queue="viewonly")

    page = viewer_client.get(f"{JOBS}{job.id}/")
    queues = viewer_client.get(QUEUES)

    assert page.status_code == 200 and 'value="retry"' not in page.content.decode()
    assert queues.status_code == 200 and 'value="pause"' not in queues.content.decode()
    assert viewer_client.post(f"{JOBS}{job.id}/act/", {"action": "retry"}).status_code == 403
    assert (
        viewer_client.post(f"{JOBS}act/", {"action": "retry", "job": [job.id]}).status_code == 403
    )
    assert (
        viewer_client.post(f"{QUEUES}act/", {"action": "pause", "queue": "viewonly"}).status_code
        == 403
    )
    assert Admin().get_job(job.id).state == "failed"


def test_a_user_who_may_see_only_jobs_or_only_queues_gets_no_link_to_the_other_page(
    client, django_user_model
):
    """Bug: the job list linked to the queues page, and the queues page to the
    job list, for users whose permission gave them a 403 there."""
    from django.contrib.auth.models import Permission

    job = FailedJobFactory(queue="seen")
    for username, codename, page, other in (
        ("jobs-only", "view_job", JOBS, QUEUES),
        ("queues-only", "view_queue", QUEUES, JOBS),
    ):
        user = django_user_model.objects.create_user(username=username, is_staff=True)
        user.user_permissions.set(Permission.objects.filter(codename=codename))
        client.force_login(user)
        for path in (page, f"{JOBS}{job.id}/") if page == JOBS else (page,):
            body = client.get(path).content.decode()
            assert f'href="{other}' not in body, f"{username} is offered {other} on {path}"
        assert client.get(other).status_code == 403


def test_actions_without_a_csrf_token_are_refused(operator):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    job = FailedJobFactory()
    assert client.post(f"{JOBS}{job.id}/act/", {"action": "retry"}).status_code == 403
    assert Admin().get_job(job.id).state == "failed"


def test_the_queues_page_shows_counts_chart_and_pauses_a_queue(operator_client):
    SucceededJobFactory(queue="dash")
    ReadyJobFactory(queue="dash")

    page = operator_client.get(QUEUES)
    body = page.content.decode()
    assert page.status_code == 200 and 'id="wh-queue-dash"' in body and "<svg" in body
    response = operator_client.post(
        f"{QUEUES}act/", {"action": "pause", "queue": "dash"}, follow=True
    )
    assert any("queue 'dash' is paused" in t for t in texts(response))
    row = next(r for r in response.context["rows"] if r["stats"].name == "dash")
    assert row["stats"].paused
    operator_client.post(f"{QUEUES}act/", {"action": "resume", "queue": "dash"})
    assert not next(q for q in Admin().queue_stats() if q.name == "dash").paused


def test_the_queues_page_stops_counting_at_its_limit_and_shows_the_queues_limits(
    operator_client, monkeypatch
):
    monkeypatch.setattr(admin_queues, "QUEUE_PAGE_COUNT_LIMIT", 2)
    for _ in range(3):
        ReadyJobFactory(queue="shop")
    Admin().set_queue_limits("shop", global_concurrency=4)

    body = operator_client.get(QUEUES).content.decode()

    row = body[body.index('id="wh-queue-shop"') :].split("</tr>")[0]
    assert ">2+</td>" in row and "4 at once" in row


def test_the_queues_page_lists_the_schedules_and_their_next_run(operator_client):
    from django_workhorse.core.schedules import Schedule, sync
    from django_workhorse.worker.scheduler import sweep

    with connection.cursor() as cursor:
        sync(
            cursor,
            [
                Schedule("nightly", "jobtests.jobs.record", "0 3 * * *", "UTC"),
                Schedule("hourly", "jobtests.jobs.record", "0 * * * *"),
            ],
        )
        sweep(cursor)
    Admin().pause_schedule("hourly")

    page = operator_client.get(QUEUES)

    body = page.content.decode()
    assert page.status_code == 200
    assert [s.name for s in page.context["schedules"]] == ["hourly", "nightly"]
    nightly = body[body.index('id="wh-schedule-nightly"') :].split("</tr>")[0]
    next_run = page.context["schedules"][1].next_run_at
    assert next_run is not None
    assert next_run.strftime("%Y-%m-%d 03:00:00") in nightly
    assert "<code>0 3 * * *</code>" in nightly
    hourly = body[body.index('id="wh-schedule-hourly"') :].split("</tr>")[0]
    assert ">paused</span>" in hourly


def test_the_queues_page_says_when_there_are_no_schedules(operator_client):
    body = operator_client.get(QUEUES).content.decode()

    assert 'id="wh-schedules"' in body and "No schedules." in body


@pytest.mark.parametrize(
    "data", [{"action": "pause", "queue": "\x00"}, {"action": "nap", "queue": "dash"}, {}]
)
def test_bad_queue_actions_get_a_message(operator_client, data):
    response = operator_client.post(f"{QUEUES}act/", data, follow=True)
    assert response.status_code == 200 and texts(response)


def test_pausing_an_unknown_queue_gets_a_message_naming_it(operator_client):
    response = operator_client.post(
        f"{QUEUES}act/", {"action": "pause", "queue": "dahs"}, follow=True
    )
    assert response.status_code == 200
    assert any("unknown queue 'dahs'" in t for t in texts(response))


def test_the_admin_index_lists_jobs_and_queues_only(operator_client):
    body = operator_client.get("/admin/").content.decode()
    assert "Jobs" in body and "Queues" in body and "historys" not in body


@pytest.mark.parametrize(
    ("zone", "run_at"),
    [
        ("Asia/Tokyo", datetime(9999, 12, 31, 23, tzinfo=UTC)),
        ("America/New_York", datetime(1, 1, 1, 1, tzinfo=UTC)),
    ],
)
def test_a_run_at_the_local_calendar_cannot_hold_is_shown_in_utc(
    operator_client, settings, zone, run_at
):
    """A run_at may be anywhere in the years 1 to 9999 UTC; in some time zones
    that is outside the calendar, and the list and the job page still render."""
    settings.TIME_ZONE = zone
    handle = add.options(run_at=run_at).enqueue(a=1, b=2)

    listing = operator_client.get(JOBS)
    page = operator_client.get(f"{JOBS}{handle.id}/")

    assert (listing.status_code, page.status_code) == (200, 200)
    assert run_at.strftime("%Y-%m-%d %H:%M:%S") + " UTC" in listing.content.decode()
    assert run_at.strftime("%Y-%m-%d %H:%M:%S.%f") + " UTC" in page.content.decode()


def test_the_workers_page_shows_the_route_of_each_workers_successes(viewer_client):
    with connection.cursor() as cursor:
        for worker_id, slots, route in (
            ("host-r:1:one", 1, "one_slot"),
            ("host-r:2:four", 4, "batched"),
        ):
            info = describe_worker(worker_id, {"route-q": slots}, 0, 15.0, route)
            store.heartbeat_many(cursor, worker_id, [], [], 30, json.dumps(info))

    response = viewer_client.get(QUEUES + "workers/")

    assert response.status_code == 200
    rows = {row["worker"].worker_id: row["worker"] for row in response.context["rows"]}
    assert rows["host-r:1:one"].success_route == "one_slot"
    assert rows["host-r:2:four"].success_route == "batched"
    body = response.content.decode()
    assert "<th>Successes</th>" in body
    assert '<td class="wh-route">one_slot</td>' in body
    assert '<td class="wh-route">batched</td>' in body
