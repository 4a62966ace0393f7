"""The operator's console in Chromium: what a support user without the
payload permission sees, and screenshots of the pages at 1280 px and on a
390 px phone, saved under .tmp/screenshots/ (gitignored) as artifacts."""

from __future__ import annotations

from pathlib import Path

import pytest

from django_workhorse import Admin
from tests.acceptance.conftest import workers  # noqa: F401  (the runworker fixture)
from tests.browser.pages import log_in, staff
from tests.factories import ActiveJobFactory, FailedJobFactory, ReadyJobFactory, jobs_holding
from tests.helpers import poll_until

pytestmark = pytest.mark.django_db(transaction=True)


SCREENSHOTS = Path(__file__).resolve().parents[2] / ".tmp" / "screenshots"
SECRET = "alice@example.com"


def screenshot(page, name: str) -> Path:
    """A full-page PNG under .tmp/screenshots/, kept after the test."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.read_bytes().startswith(b"\x89PNG"), f"{path} is not a PNG"
    return path


def private_jobs() -> list[int]:
    return jobs_holding(SECRET)


def test_a_support_user_without_the_payload_permission_sees_no_payload_anywhere(
    browser, live_server, django_user_model
):
    staff(django_user_model, "support", ["view_job", "view_queue"])
    jobs = private_jobs()
    base = live_server.url
    page = log_in(browser.new_context(viewport={"width": 1280, "height": 900}), base, "support")

    page.goto(f"{base}/admin/django_workhorse/job/?queue=private")
    assert page.locator("#result_list tbody tr").count() == 3
    assert SECRET not in page.content()
    for job_id in jobs:
        page.goto(f"{base}/admin/django_workhorse/job/{job_id}/")
        for summary in page.locator("#wh-timeline details summary").all():
            summary.click()  # unfold every folded detail of the timeline
        assert page.locator("#wh-payload-hidden").is_visible()
        assert SECRET not in page.content(), f"job {job_id}'s page shows {SECRET}"
        assert SECRET not in page.locator("body").inner_text()
    page.goto(f"{base}/admin/django_workhorse/job/{jobs[0]}/")
    assert "builtins.ValueError" in page.locator("#content").inner_text()
    screenshot(page, "support-failed-job-1280")
    page.goto(f"{base}/admin/django_workhorse/queue/")
    assert SECRET not in page.content()


def test_the_workers_view_shows_two_live_workers_and_drops_one_that_stopped(
    browser,
    live_server,
    django_user_model,
    workers,  # noqa: F811  (the fixture imported above)
):
    staff(django_user_model, "viewer", ["view_job", "view_queue"])
    first = workers.start("--queues", "email", "--concurrency", "3", "--id", "first")
    second = workers.start("--queues", "email,default", "--id", "second")
    base = live_server.url
    page = log_in(browser.new_context(viewport={"width": 1280, "height": 900}), base, "viewer")

    page.goto(f"{base}/admin/django_workhorse/queue/")
    page.click("#wh-workers-link")

    def listed() -> int:
        page.reload()
        return page.locator("#wh-workers tr.wh-worker").count()

    poll_until(lambda: listed() == 2, timeout=30, interval=0.5, what="both workers listed")
    text = page.locator("#wh-workers").inner_text()
    for worker in (first, second):
        assert str(worker.pid) in text
    assert "email (3)" in text and "default (" in text and "live" in text
    for worker, route in ((first, "batched"), (second, "batched")):
        row = page.locator("#wh-workers tr.wh-worker", has_text=str(worker.pid))
        assert row.locator("td.wh-route").inner_text() == route
    screenshot(page, "workers-1280")

    first.stop()
    assert listed() == 1
    assert str(second.pid) in page.locator("#wh-workers").inner_text()
    second.stop()


OPERATOR = ["view_job", "change_job", "view_queue", "change_queue", "view_job_payload"]


def test_an_operator_sets_and_clears_a_queues_limits_and_pauses_and_resumes_it(
    browser, live_server, django_user_model
):
    staff(django_user_model, "operator", OPERATOR)
    ReadyJobFactory(queue="mail")
    base = live_server.url
    page = log_in(browser.new_context(viewport={"width": 1280, "height": 900}), base, "operator")
    page.goto(f"{base}/admin/django_workhorse/queue/")
    row = page.locator("#wh-queue-mail")

    row.locator(".wh-limits summary").click()
    row.locator("input[name=concurrency]").fill("2")
    row.locator("input[name=rate]").fill("100")
    row.locator("input[name=period]").fill("60")
    row.locator("button[value=set_limits]").click()
    assert "limits set to 2 at once, 100 per" in page.locator(".messagelist").inner_text()
    (mail,) = [q for q in Admin().queue_stats() if q.name == "mail"]
    assert (mail.concurrency_limit, mail.rate_limit, mail.rate_period) == (2, 100, 60.0)
    screenshot(page, "queues-limits-1280")

    row.locator(".wh-limits summary").click()
    row.locator("button[value=clear_limits]").click()
    assert "no global limits" in page.locator(".messagelist").inner_text()
    (mail,) = [q for q in Admin().queue_stats() if q.name == "mail"]
    assert (mail.concurrency_limit, mail.rate_limit) == (None, None)

    page.locator("#wh-queue-mail button[value=pause]").click()
    assert "Queue 'mail' is paused" in page.locator(".messagelist .success").text_content()
    page.locator("#wh-queue-mail button[value=resume]").click()
    assert page.locator("#wh-queue-mail button[value=pause]").count() == 1


def test_an_operator_cancels_a_job_after_confirming_with_a_reason(
    browser, live_server, django_user_model
):
    staff(django_user_model, "operator", OPERATOR)
    job = ReadyJobFactory(queue="orders")
    base = live_server.url
    page = log_in(browser.new_context(viewport={"width": 1280, "height": 900}), base, "operator")
    page.goto(f"{base}/admin/django_workhorse/job/{job.id}/")

    page.click("#wh-cancel")
    assert Admin().get_job(job.id).state == "ready"  # asking changed nothing
    page.fill("#wh-reason", "customer asked twice")
    screenshot(page, "cancel-confirmation-1280")
    page.click("button[value=cancel]")

    assert page.locator("#wh-state").inner_text() == "canceled"
    assert Admin().get_job(job.id).error["reason"] == "customer asked twice"
    assert "customer asked twice" in page.locator("#wh-timeline").inner_text()


def test_the_console_at_1280_px_and_on_a_390_px_phone(browser, live_server, django_user_model):
    """Screenshots of every page of the console, kept in .tmp/screenshots/; on a
    phone the job list shows each job's state without scrolling sideways."""
    staff(django_user_model, "operator", OPERATOR)
    failed = FailedJobFactory(
        queue="mail", error={"type": "builtins.ConnectionError", "message": "refused"}
    )
    ReadyJobFactory(queue="mail")
    ActiveJobFactory(queue="reports")
    base = live_server.url
    pages = {
        "job-list": "job/",
        "job-page": f"job/{failed.id}/",
        "failures": "job/failures/",
        "queues": "queue/",
        "workers": "queue/workers/",
    }
    for width, height in ((1280, 900), (390, 844)):
        context = browser.new_context(
            viewport={"width": width, "height": height}, is_mobile=width < 768
        )
        page = log_in(context, base, "operator")
        for name, path in pages.items():
            page.goto(f"{base}/admin/django_workhorse/{path}")
            screenshot(page, f"{name}-{width}")
        page.goto(f"{base}/admin/django_workhorse/job/")
        for badge in page.locator("#result_list tbody .wh-badge").all():
            box = badge.bounding_box()
            assert box is not None and box["x"] + box["width"] <= width, (
                f"a job's state is off screen at {width}px"
            )
        context.close()


def test_auto_refresh_is_turned_on_and_off_from_the_page(browser, live_server, django_user_model):
    staff(django_user_model, "operator", OPERATOR)
    ReadyJobFactory(queue="live")
    base = live_server.url
    page = log_in(browser.new_context(), base, "operator")

    page.goto(f"{base}/admin/django_workhorse/job/?queue=live")
    assert page.locator("meta[http-equiv=refresh]").count() == 0
    page.click("#wh-refresh-on")
    assert page.locator("meta[http-equiv=refresh]").get_attribute("content") == "5"
    page.select_option("#wh-state", "ready")
    page.click("#wh-filter-form input[type=submit]")
    assert "refresh=5" in page.url  # filtering keeps it on
    page.click("#wh-refresh-off")
    assert page.locator("meta[http-equiv=refresh]").count() == 0
