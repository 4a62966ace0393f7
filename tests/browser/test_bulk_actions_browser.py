"""Retry all and cancel all in Chromium over 10,000 jobs, run by two live
workers: confirming returns at once on the action's page, whose progress
advances as batches commit, until the counts are all in; an operator stops
an action midway; a user without the change permission cannot ask."""

from __future__ import annotations

import re

import pytest
from demo.jobs import add
from django.db import connection

from django_workhorse import Admin
from django_workhorse.operations.bulk_actions import OPERATOR_QUEUE
from tests.acceptance.conftest import workers  # noqa: F401  (the runworker fixture)
from tests.browser.pages import log_in, staff
from tests.factories import ReadyJobFactory, many_failed_jobs
from tests.helpers import poll_until

pytestmark = pytest.mark.django_db(transaction=True)

OPERATOR = ["view_job", "change_job", "view_queue", "change_queue"]
JOBS = "/admin/django_workhorse/job/"
ACTION_URL = re.compile(r".*/admin/django_workhorse/job/actions/(\d+)/$")


def two_workers(workers):  # noqa: F811  (the fixture imported above)
    """Two live workers serving the operators' queue (and not the jobs acted on)."""
    started = [
        workers.start("--queues", OPERATOR_QUEUE, "--id", f"w{n}", ready=False) for n in (1, 2)
    ]
    for worker in started:
        worker.wait_ready()
    return started


def done_of(page) -> int:
    return int(page.locator("#wh-action-done").inner_text().replace(",", ""))


def watch_to_the_end(page) -> list[int]:
    """The done counts the action's page showed, reloaded until it ended."""
    seen = [done_of(page)]

    def ended() -> bool:
        page.reload()
        seen.append(done_of(page))
        return page.locator("#wh-action-status").inner_text() in ("finished", "canceled")

    poll_until(ended, timeout=180, interval=0.2, what="the action ended")
    return seen


def acted_on_more_than_once(kind: str) -> int:
    """Jobs with more than one ``kind`` event."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM (SELECT job_id FROM workhorse_job_event WHERE kind = %s"
            " GROUP BY job_id HAVING count(*) > 1) t",
            [kind],
        )
        return int(cursor.fetchone()[0])


def test_retry_all_of_10000_failed_jobs_returns_at_once_and_shows_its_progress(
    browser,
    live_server,
    django_user_model,
    workers,  # noqa: F811
):
    staff(django_user_model, "operator", OPERATOR)
    failed = many_failed_jobs(10_000, queue="flood")
    running = two_workers(workers)
    admin = Admin()
    # Held back until the page and the banner were seen with nothing done.
    admin.pause_queue(OPERATOR_QUEUE)
    base = live_server.url
    page = log_in(browser.new_context(viewport={"width": 1280, "height": 900}), base, "operator")

    page.goto(f"{base}{JOBS}?queue=flood&state=failed")
    page.click("#wh-retry-all")
    assert page.locator("#wh-matching-count strong").inner_text() == "10,000"
    page.click("#wh-matching-confirm")

    action_id = int(ACTION_URL.match(page.url).group(1))
    assert page.locator("#wh-action-status").inner_text() == "queued"
    assert done_of(page) == 0
    page.goto(f"{base}{JOBS}")
    assert "0 / counting…" in page.locator(f"#wh-action-banner-{action_id}").inner_text()
    page.goto(f"{base}{JOBS}actions/{action_id}/")
    admin.resume_queue(OPERATOR_QUEUE)
    seen = watch_to_the_end(page)

    assert seen == sorted(seen) and seen[-1] == 10_000
    assert page.locator("#wh-action-status").inner_text() == "finished"
    assert page.locator("#wh-action-changed").inner_text() == "10000"
    assert page.locator("#wh-action-skipped").inner_text().startswith("0 ")
    assert page.locator("#wh-action-by").inner_text().startswith("operator")
    action = admin.bulk_action(action_id)
    assert (action.total, action.matched, action.changed, action.batches) == (
        10_000,
        10_000,
        10_000,
        10,
    )
    assert admin.count_jobs(queue="flood", state="ready", cap=20_000) == len(failed)
    assert acted_on_more_than_once("retried") == 0
    page.goto(f"{base}{JOBS}")
    assert page.locator(".wh-action-banner").count() == 0
    page.goto(f"{base}{JOBS}actions/")
    assert "10,000 / 10,000" in page.locator("#wh-action-list").inner_text()
    for worker in running:
        assert worker.stop() == 0


def test_cancel_all_of_10000_ready_jobs_with_a_reason_leaves_other_queues_alone(
    browser,
    live_server,
    django_user_model,
    workers,  # noqa: F811
):
    staff(django_user_model, "operator", OPERATOR)
    add.options(queue="flood").enqueue_many([{"a": i, "b": 0} for i in range(10_000)])
    bystander = ReadyJobFactory(queue="calm")
    running = two_workers(workers)
    base = live_server.url
    page = log_in(browser.new_context(viewport={"width": 1280, "height": 900}), base, "operator")

    page.goto(f"{base}{JOBS}?queue=flood&state=ready")
    page.click("#wh-cancel-all")
    assert page.locator("#wh-matching-count strong").inner_text() == "10,000"
    page.fill("#wh-reason", "bad deploy")
    page.click("#wh-matching-confirm")
    assert ACTION_URL.match(page.url)
    seen = watch_to_the_end(page)

    assert seen == sorted(seen) and seen[-1] == 10_000
    assert page.locator("#wh-action-changed").inner_text() == "10000"
    assert Admin().count_jobs(queue="flood", state="canceled", cap=20_000) == 10_000
    assert Admin().get_job(bystander.id).state == "ready"
    (canceled,) = Admin().list_jobs(queue="flood", limit=1).items
    assert Admin().get_job(canceled.id).error["reason"] == "bad deploy"
    for worker in running:
        assert worker.stop() == 0


def test_an_operator_stops_an_action_midway_and_keeps_what_it_did(
    browser,
    live_server,
    django_user_model,
    workers,  # noqa: F811
):
    staff(django_user_model, "operator", OPERATOR)
    many_failed_jobs(10_000, queue="flood")
    admin = Admin()
    # Small batches: many of them, so that it is still running when stopped.
    action = admin.start_bulk("retry", queue="flood", batch_size=20)
    running = two_workers(workers)
    base = live_server.url
    page = log_in(browser.new_context(viewport={"width": 1280, "height": 900}), base, "operator")
    poll_until(
        lambda: admin.bulk_action(action.id).matched > 0, timeout=60, interval=0.1, what="a batch"
    )

    page.goto(f"{base}{JOBS}actions/{action.id}/")
    page.click("#wh-action-cancel")
    seen = watch_to_the_end(page)

    stopped = admin.bulk_action(action.id)
    assert stopped.status == "canceled" and stopped.canceled_by == "operator"
    assert 0 < stopped.matched < 10_000 and seen[-1] == stopped.matched
    assert admin.count_jobs(queue="flood", state="failed", cap=20_000) == (10_000 - stopped.changed)
    assert page.locator("#wh-action-cancel").count() == 0
    for worker in running:
        assert worker.stop() == 0


def test_a_user_without_the_change_permission_is_offered_no_action_and_refused_one(
    browser, live_server, django_user_model, client
):
    viewer = staff(django_user_model, "viewer", ["view_job", "view_queue"])
    many_failed_jobs(3, queue="flood")
    action = Admin().start_bulk("retry", queue="flood")
    base = live_server.url
    page = log_in(browser.new_context(viewport={"width": 1280, "height": 900}), base, "viewer")

    page.goto(f"{base}{JOBS}?queue=flood&state=failed")
    assert page.locator("#wh-retry-all").count() == 0
    page.goto(f"{base}{JOBS}act/all/?action=retry&queue=flood")
    assert "403" in page.title() or page.locator("h1").inner_text().startswith("403")
    page.goto(f"{base}{JOBS}actions/{action.id}/")
    assert page.locator("#wh-action-status").inner_text() == "queued"
    assert page.locator("#wh-action-cancel").count() == 0
    client.force_login(viewer)
    assert client.post(f"{JOBS}act/all/", {"action": "retry", "queue": "flood"}).status_code == 403
    assert client.post(f"{JOBS}actions/{action.id}/cancel/").status_code == 403
    assert [a.id for a in Admin().bulk_actions()] == [action.id]
