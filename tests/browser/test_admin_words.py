"""What the admin says matches the ledger, read in a real browser at 1280 px
with the admin's navigation sidebar open: the queues page shows every
column, and a job that succeeded after a failed attempt reads as succeeded,
its earlier error kept as history (docs/admin.md)."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import override_settings

from django_workhorse import Admin
from django_workhorse.db import store
from tests.browser.pages import log_in, screenshot, staff
from tests.factories import (
    ActiveJobFactory,
    FailedJobFactory,
    ReadyJobFactory,
    RetryingJobFactory,
    ScheduledJobFactory,
    SucceededJobFactory,
)
from tests.helpers import poll_until

pytestmark = pytest.mark.django_db(transaction=True)

WIDE = {"width": 1280, "height": 900}
QUEUE = "notifications.email-digest"


def operator(django_user_model) -> None:
    staff(
        django_user_model,
        "operator",
        ["view_job", "change_job", "view_job_payload", "view_queue", "change_queue"],
    )


def succeeded_after_a_retry(queue: str) -> int:
    """A job whose first attempt raised and whose second, once its retry
    came due, returned."""
    job = RetryingJobFactory(
        queue=queue,
        worker="worker-a",
        retry_delay=0.05,
        error={"type": "builtins.ConnectionError", "message": "mail server refused"},
    )
    with connection.cursor() as cursor:
        # The claim that finds the retry due moves it to ready, then takes it.
        (claimed,) = poll_until(
            lambda: store.claim_many(cursor, "worker-b", [queue], [1], 30),
            timeout=10,
            interval=0.02,
            what="the retry to come due",
        )
        done = store.succeed_many(
            cursor, "worker-b", [job.id], [claimed.fence], [json.dumps({"sent": True})]
        )
    assert done == [(job.id, True)]
    return job.id


@override_settings(WORKHORSE={"QUEUES": {QUEUE: {"concurrency": 12}}})
def test_the_queues_page_shows_every_column_at_1280_px_with_the_sidebar_open(
    browser, live_server, django_user_model, tmp_path
):
    operator(django_user_model)
    ReadyJobFactory.create_batch(11, queue=QUEUE)
    ScheduledJobFactory.create_batch(11, queue=QUEUE)
    for n in range(11):
        SucceededJobFactory(queue=f"{QUEUE}-done-{n % 2}")
        FailedJobFactory(queue=f"{QUEUE}-failed-{n % 2}")
    Admin().set_queue_limits(QUEUE, global_concurrency=1000, rate=10000, period=3600)
    page = log_in(browser.new_context(viewport=WIDE), live_server.url, "operator")

    page.goto(f"{live_server.url}/admin/django_workhorse/queue/")

    assert page.locator("#nav-sidebar").is_visible()
    shot = screenshot(page, tmp_path / "queues-1280.png")
    table = page.locator("#wh-queues")
    overflow = page.evaluate(
        "(() => { const s = document.querySelector('#wh-queues').parentElement;"
        " return s.scrollWidth - s.clientWidth; })()"
    )
    assert overflow <= 0, f"the queues table scrolls by {overflow}px at 1280 px ({shot})"
    viewport_right = WIDE["width"]
    for cell in table.locator("thead th").all():
        box = cell.bounding_box()
        assert box is not None and box["x"] + box["width"] <= viewport_right, cell.inner_text()
    row = page.locator(f'[id="wh-queue-{QUEUE}"]')
    assert "11" in row.locator("td").nth(4).inner_text()  # ready, read in full


@override_settings(WORKHORSE={"QUEUES": {QUEUE: {"concurrency": 12}}})
def test_the_queues_table_still_fits_1280_px_with_a_queues_limits_form_open(
    browser, live_server, django_user_model, tmp_path
):
    operator(django_user_model)
    ReadyJobFactory.create_batch(3, queue=QUEUE)
    Admin().set_queue_limits(QUEUE, global_concurrency=1000, rate=10000, period=3600)
    page = log_in(browser.new_context(viewport=WIDE), live_server.url, "operator")
    page.goto(f"{live_server.url}/admin/django_workhorse/queue/")

    page.locator(f'[id="wh-queue-{QUEUE}"] .wh-limits summary').click()

    shot = screenshot(page, tmp_path / "queues-limits-open-1280.png")
    overflow = page.evaluate(
        "(() => { const s = document.querySelector('#wh-queues').parentElement;"
        " return s.scrollWidth - s.clientWidth; })()"
    )
    assert overflow <= 0, f"the queues table scrolls by {overflow}px at 1280 px ({shot})"
    for field in page.locator(f'[id="wh-queue-{QUEUE}"] .wh-limits input[type=number]').all():
        box = field.bounding_box()
        assert box is not None and box["x"] + box["width"] <= WIDE["width"], shot


def test_a_queue_with_no_worker_connected_reads_so(browser, live_server, django_user_model):
    operator(django_user_model)
    ReadyJobFactory(queue=QUEUE)
    page = log_in(browser.new_context(viewport=WIDE), live_server.url, "operator")

    page.goto(f"{live_server.url}/admin/django_workhorse/queue/")

    status = page.locator(f'[id="wh-queue-{QUEUE}"] td').nth(1)
    assert "no worker" in status.inner_text()
    assert "running" not in status.inner_text()


def test_the_job_page_of_a_job_that_succeeded_after_a_retry_at_1280_px(
    browser, live_server, django_user_model, tmp_path
):
    operator(django_user_model)
    job_id = succeeded_after_a_retry("mail")
    page = log_in(browser.new_context(viewport=WIDE), live_server.url, "operator")

    page.goto(f"{live_server.url}/admin/django_workhorse/job/{job_id}/")

    shot = screenshot(page, tmp_path / "succeeded-after-retry.png")
    assert page.locator("#wh-state").inner_text() == "succeeded"
    headings = page.locator("#content-main h2").all_inner_texts()
    assert "Error" not in headings and "Last error" not in headings, shot
    history = page.locator("#wh-earlier-errors")
    assert "succeeded at attempt 2" in history.inner_text()
    assert "attempt 1" in history.inner_text()
    assert "ConnectionError: mail server refused" in history.inner_text()
    timeline = page.locator("#wh-timeline")
    assert timeline.locator("text=attempt 1 failed").count() == 1
    assert timeline.locator("text=attempt 2 succeeded").count() == 1
    # The move from scheduled to ready was the retry coming due, not an operator.
    assert timeline.locator("text=retry due").count() == 1
    assert timeline.locator("text=promoted").count() == 0
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= WIDE["width"], f"the job page is {width}px wide ({shot})"


def test_a_sleeping_job_shows_the_attempt_it_sleeps_in_and_an_operator_promote_reads_so(
    browser, live_server, django_user_model
):
    operator(django_user_model)
    job = ActiveJobFactory(queue="naps", worker="worker-a")
    with connection.cursor() as cursor:
        ((_, slept, _, _),) = store.sleep_many(
            cursor, "worker-a", [job.id], [job.fence], ["nap"], [None], [3600.0]
        )
    assert slept
    page = log_in(browser.new_context(viewport=WIDE), live_server.url, "operator")

    page.goto(f"{live_server.url}/admin/django_workhorse/job/{job.id}/")
    attempt = page.locator("#wh-attempt").inner_text()
    page.click("button[value=promote]")

    assert attempt.startswith("attempt 1 / 3")
    assert "sleeping" in attempt
    timeline = page.locator("#wh-timeline")
    assert timeline.locator("text=promoted by an operator").count() == 1
