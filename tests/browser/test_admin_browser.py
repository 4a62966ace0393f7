"""The operator's walk through the admin in a real browser: list, filter,
a failed job's timeline, retry, the queues page, pause; a view-only user
who sees no buttons and whose forged POST is refused; and dark mode and a
narrow screen, where no page is wider than the screen."""

from __future__ import annotations

import json

import pytest
from django.db import connection

import django_workhorse as workhorse
from django_workhorse import Admin
from django_workhorse.db import store
from tests.browser.pages import log_in, screenshot, staff
from tests.factories import (
    ActiveJobFactory,
    FailedJobFactory,
    ReadyJobFactory,
    SucceededJobFactory,
)

pytestmark = pytest.mark.django_db(transaction=True)


def failed_twice(queue: str) -> int:
    """A job whose two attempts both raised, the second one for good."""
    job = ActiveJobFactory(queue=queue, worker="worker-a", max_attempts=2)
    with connection.cursor() as cursor:
        for attempt, (worker, fence) in enumerate([("worker-a", job.fence), ("worker-b", None)], 1):
            if fence is None:
                (claimed,) = store.claim_many(cursor, worker, [queue], [1], 30)
                fence = claimed.fence
            error = {
                "type": "builtins.ConnectionError",
                "message": f"mail server refused (attempt {attempt})",
                "traceback": 'Traceback (most recent call last):\n  File "jobs.py", line 9, '
                f"in send\nConnectionError: mail server refused (attempt {attempt})\n",
            }
            store.fail_many(
                cursor, worker, [job.id], [fence], [json.dumps(error)], ["failed"], [True], [0.0]
            )
    return job.id


@workhorse.job(name="tests.browser.report_" + "n" * 179)
def long_named(a: int, b: int) -> int:
    """A job whose name is as long as a name may be (200 characters)."""
    return a + b


def test_an_operator_reads_a_failed_job_retries_it_and_pauses_its_queue(
    browser, live_server, django_user_model, tmp_path
):
    staff(
        django_user_model,
        "operator",
        ["view_job", "change_job", "view_queue", "change_queue", "view_job_payload"],
    )
    job_id = failed_twice("mail")
    SucceededJobFactory(queue="mail")
    base = live_server.url
    page = log_in(browser.new_context(viewport={"width": 1280, "height": 900}), base, "operator")

    page.goto(f"{base}/admin/django_workhorse/job/")
    page.click(".wh-states a:text-is('failed')")
    page.wait_for_url("**state=failed**")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 1 and rows.first.locator(".wh-badge").inner_text() == "failed"
    screenshot(page, tmp_path / "job-list.png")

    page.click(f"#result_list a:text-is('{job_id}')")
    timeline = page.locator("#wh-timeline")
    assert timeline.locator("text=attempt 1 failed").count() == 1
    assert timeline.locator("text=attempt 2 failed").count() == 1
    assert timeline.locator("text=worker-b").count() >= 1
    timeline.locator("details summary").nth(1).click()
    assert timeline.locator(
        "pre", has_text="ConnectionError: mail server refused (attempt 2)"
    ).is_visible()
    screenshot(page, tmp_path / "job-page.png")

    page.click("button[value=retry]")
    assert "ready to run again" in page.locator(".messagelist .success").text_content()
    assert page.locator("#wh-state").inner_text() == "ready"
    assert Admin().get_job(job_id).state == "ready"

    page.goto(f"{base}/admin/django_workhorse/queue/")
    page.locator("#wh-queue-mail button[value=pause]").click()
    assert "Queue 'mail' is paused" in page.locator(".messagelist .success").text_content()
    assert page.locator("#wh-queue-mail button[value=resume]").count() == 1
    screenshot(page, tmp_path / "queues.png")


def test_the_pages_render_in_dark_mode_and_on_a_narrow_screen(
    browser, live_server, django_user_model, tmp_path
):
    staff(
        django_user_model,
        "operator",
        ["view_job", "change_job", "view_queue", "change_queue", "view_job_payload"],
    )
    job_id = failed_twice("dark")
    base = live_server.url
    dark = log_in(browser.new_context(color_scheme="dark"), base, "operator")
    narrow = log_in(
        browser.new_context(viewport={"width": 375, "height": 800}, is_mobile=True),
        base,
        "operator",
    )
    for name, page in (("dark", dark), ("narrow", narrow)):
        for path in ("job/", f"job/{job_id}/", "queue/"):
            page.goto(f"{base}/admin/django_workhorse/{path}")
            shot = path.replace("/", "-").strip("-")
            screenshot(page, tmp_path / f"{name}-{shot}.png")
    background = dark.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background != "rgb(255, 255, 255)"
    width = narrow.evaluate("document.documentElement.scrollWidth")
    assert width <= 380, f"the queues page is {width}px wide on a 375px screen"


def test_a_view_only_user_sees_no_buttons_and_a_forged_post_is_forbidden(
    browser, live_server, django_user_model, tmp_path
):
    staff(django_user_model, "viewer", ["view_job", "view_queue"])
    job_id = failed_twice("viewonly")
    base = live_server.url
    context = browser.new_context()
    page = log_in(context, base, "viewer")

    page.goto(f"{base}/admin/django_workhorse/job/{job_id}/")
    assert page.locator("#wh-timeline").count() == 1
    assert page.locator("button[value=retry]").count() == 0
    page.goto(f"{base}/admin/django_workhorse/queue/")
    assert page.locator("button[value=pause]").count() == 0
    screenshot(page, tmp_path / "viewer-queues.png")

    token = next(c["value"] for c in context.cookies() if c["name"] == "csrftoken")
    forged = context.request.post(
        f"{base}/admin/django_workhorse/job/{job_id}/act/",
        form={"action": "retry", "csrfmiddlewaretoken": token},
        headers={"Referer": f"{base}/admin/"},
    )
    assert forged.status == 403
    assert Admin().get_job(job_id).state == "failed"


def test_no_page_is_wider_than_a_narrow_screen(browser, live_server, django_user_model, tmp_path):
    """Bug: a long queue name widened the job list's queue filter past the
    screen, and the checkpoints table of a job page did not scroll."""
    staff(
        django_user_model,
        "operator",
        ["view_job", "change_job", "view_queue", "change_queue", "view_job_payload"],
    )
    failed_twice("a-queue-with-a-name-as-long-as-a-queue-name-may-be-53")
    job = ActiveJobFactory()
    with connection.cursor() as cursor:
        result = {"receipt": "r" * 60, "lines": list(range(40))}
        store.write_checkpoint(cursor, job.id, job.worker, job.fence, "charge", json.dumps(result))
    base = live_server.url
    context = browser.new_context(viewport={"width": 375, "height": 800}, is_mobile=True)
    page = log_in(context, base, "operator")

    for path in ("job/", f"job/{job.id}/", "queue/"):
        page.goto(f"{base}/admin/django_workhorse/{path}")
        shot = screenshot(page, tmp_path / f"narrow-{path.replace('/', '-').strip('-')}.png")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, f"{path} is {width}px wide on a 375px screen ({shot})"


def test_long_words_in_a_job_page_wrap_on_a_narrow_screen(
    browser, live_server, django_user_model, tmp_path
):
    """Bug: an error message, a worker id, a cancel reason or a job name with
    no space in it (a URL, a host name) made the job page several screens wide."""
    staff(
        django_user_model,
        "operator",
        ["view_job", "change_job", "view_queue", "change_queue", "view_job_payload"],
    )
    url = "https://mail.example.com/" + "a" * 300
    failed = FailedJobFactory(error={"type": "builtins.ConnectionError", "message": url})
    running = ActiveJobFactory(worker="worker-" + "w" * 200)
    Admin().cancel(running.id, reason="customer-" + "r" * 300)
    named = ReadyJobFactory(definition=long_named)
    base = live_server.url
    context = browser.new_context(viewport={"width": 375, "height": 800}, is_mobile=True)
    page = log_in(context, base, "operator")

    for job_id in (failed.id, running.id, named.id):
        page.goto(f"{base}/admin/django_workhorse/job/{job_id}/")
        shot = screenshot(page, tmp_path / f"narrow-job-{job_id}.png")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, f"job {job_id}'s page is {width}px wide on a 375px screen ({shot})"
