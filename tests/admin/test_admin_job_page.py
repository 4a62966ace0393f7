"""A job's page and the job list as docs/admin.md describes them: the list's
columns and bulk form, a succeeded job's result, the buttons of blocked and
canceled jobs, and CSRF on every action."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import Client

from django_workhorse import Admin
from django_workhorse.db import store
from tests.factories import (
    BlockedJobFactory,
    FailedJobFactory,
    ReadyJobFactory,
    ScheduledJobFactory,
    SucceededJobFactory,
)

pytestmark = pytest.mark.django_db

JOBS = "/admin/django_workhorse/job/"
QUEUES = "/admin/django_workhorse/queue/"


def list_row(body: str, job_id: int) -> str:
    start = body.index(f'<a href="{JOBS}{job_id}/">{job_id}</a>')
    return body[body.rindex("<tr>", 0, start) :].split("</tr>")[0]


def test_the_job_list_shows_run_at_for_a_live_job_and_finished_for_a_terminal_one(
    operator_client,
):
    scheduled = ScheduledJobFactory(queue="list-when")
    done = SucceededJobFactory(queue="list-when")
    live, ended = Admin().get_job(scheduled.id), Admin().get_job(done.id)

    body = operator_client.get(JOBS, {"queue": "list-when"}).content.decode()

    fmt = "%Y-%m-%d %H:%M:%S"
    scheduled_row, done_row = list_row(body, scheduled.id), list_row(body, done.id)
    assert "demo.jobs.add" in scheduled_row and "list-when" in scheduled_row
    assert live.created_at.strftime(fmt) in scheduled_row
    assert live.run_at.strftime(fmt) in scheduled_row  # an hour after it was created
    assert ended.finished_at.strftime(fmt) in done_row and ended.run_at is None


def test_the_job_list_has_a_checkbox_per_job_for_the_bulk_actions(operator_client):
    jobs = [ReadyJobFactory(queue="list-bulk").id for _ in range(2)]

    body = operator_client.get(JOBS, {"queue": "list-bulk"}).content.decode()

    form = body[body.index(f'action="{JOBS}act/"') :].split("</form>")[0]
    for job_id in jobs:
        assert f'<input type="checkbox" name="job" value="{job_id}"' in form
    assert '<option value="retry">' in form and '<option value="cancel">' in form
    assert 'name="csrfmiddlewaretoken"' in form


def test_the_job_page_shows_a_succeeded_jobs_result(operator_client):
    job = SucceededJobFactory(result={"sum": 42, "note": "all <done>"})

    body = operator_client.get(f"{JOBS}{job.id}/").content.decode()

    result = body.split("<h2>Result</h2>")[1].split("</pre>")[0]
    assert "&quot;sum&quot;: 42" in result and "all &lt;done&gt;" in result


@pytest.mark.parametrize(
    ("ran", "shown"),
    [
        ("4 milliseconds", "ran 4.0 ms"),
        ("350 microseconds", "ran 350 µs"),
        ("2.5 seconds", "ran 2.50 s"),
    ],
)
def test_the_timeline_shows_how_long_a_short_attempt_ran(operator_client, ran, shown):
    """Bug: every attempt under 5 ms, a no-op job's, read "ran 0.00 s"."""
    job = SucceededJobFactory()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE workhorse_attempt_history SET finished_at = started_at + %s::interval"
            " WHERE job_id = %s",
            [ran, job.id],
        )

    body = operator_client.get(f"{JOBS}{job.id}/").content.decode()

    timeline = body.split('id="wh-timeline"')[1]
    assert shown in timeline


def blocked_job() -> int:
    return BlockedJobFactory().id


def canceled_job() -> int:
    job_id = ReadyJobFactory().id
    assert Admin().cancel(job_id).status == "changed"
    return job_id


@pytest.mark.parametrize(
    ("make", "buttons"), [(blocked_job, ["cancel"]), (canceled_job, ["retry"])]
)
def test_the_job_page_of_a_blocked_or_canceled_job_offers_its_buttons(
    operator_client, make, buttons
):
    job_id = make()
    body = operator_client.get(f"{JOBS}{job_id}/").content.decode()

    offered = sorted(a for a in ("retry", "promote") if f'value="{a}"' in body)
    if f'href="{JOBS}{job_id}/cancel/"' in body:  # cancel asks first, on a page of its own
        offered.append("cancel")
    assert offered == buttons


@pytest.mark.parametrize("action", ["bulk retry", "queue pause"])
def test_bulk_and_queue_actions_without_a_csrf_token_are_refused(operator, action):
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    job = FailedJobFactory(queue="csrf-queue")
    url, data = {
        "bulk retry": (f"{JOBS}act/", {"action": "retry", "job": [job.id]}),
        "queue pause": (f"{QUEUES}act/", {"action": "pause", "queue": "csrf-queue"}),
    }[action]

    assert client.post(url, data).status_code == 403
    assert Admin().get_job(job.id).state == "failed"
    assert not next(q for q in Admin().queue_stats() if q.name == "csrf-queue").paused


def test_the_job_page_says_which_options_come_from_the_job_options_setting(operator_client):
    from django.test import override_settings
    from searchlib.tasks import index_object

    given = {"max_attempts": 1, "no_retry_on": ["django.core.exceptions.ObjectDoesNotExist"]}
    with override_settings(WORKHORSE={"JOB_OPTIONS": {"searchlib.tasks.index_object": given}}):
        job_id = index_object.enqueue(1).id
        body = operator_client.get(f"{JOBS}{job_id}/").content.decode()
    shown = body[body.index('id="wh-configured-options"') :].split("</dd>")[0]
    assert (
        "max_attempts 1, no_retry_on django.core.exceptions.ObjectDoesNotExist "
        "(from WORKHORSE[&#x27;JOB_OPTIONS&#x27;][&#x27;searchlib.tasks.index_object&#x27;])"
    ) in shown


def test_the_job_page_of_a_job_the_setting_does_not_name_says_nothing_of_it(operator_client):
    job = ReadyJobFactory(queue="no-settings")
    body = operator_client.get(f"{JOBS}{job.id}/").content.decode()
    assert "wh-configured-options" not in body


def test_earlier_attempts_mark_an_operator_retry_where_attempts_count_from_1_again(
    operator_client,
):
    job = FailedJobFactory(
        queue="page-retried", max_attempts=2, error={"type": "OSError", "message": "round one"}
    )
    assert Admin().retry(job.id).status == "changed"
    with connection.cursor() as cursor:
        for error in ({"type": "OSError", "message": "round two"}, None):
            (claimed,) = store.claim_many(cursor, "worker-r", ["page-retried"], [1], 30)
            if error is None:
                store.succeed_many(cursor, "worker-r", [job.id], [claimed.fence], ["{}"])
            else:
                store.fail_many(
                    cursor,
                    "worker-r",
                    [job.id],
                    [claimed.fence],
                    [json.dumps(error)],
                    ["failed"],
                    [True],
                    [0.0],
                )

    body = operator_client.get(f"{JOBS}{job.id}/").content.decode()

    earlier = body[body.index('id="wh-earlier-errors"') :].split("</div>")[0]
    assert "succeeded at attempt 2, counted from its last operator retry" in earlier
    items = [i.split("</li>")[0] for i in earlier.split("<li")[1:]]
    assert items == [
        ">attempt 1 failed: OSError: round one",
        ' class="wh-meta wh-retried">retried by an operator: attempts count from 1 again',
        ">attempt 1 failed: OSError: round two",
    ]
