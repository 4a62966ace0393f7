"""The operator's console in Chromium: what a support user without the
payload permission sees, and screenshots of the pages at 1280 px and on a
390 px phone, saved under .tmp/screenshots/ (gitignored) as artifacts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission
from django.db import connection

from django_workhorse import Admin, store
from tests.acceptance.conftest import workers  # noqa: F401  (the runworker fixture)
from tests.factories import ActiveJobFactory, FailedJobFactory
from tests.helpers import poll_until

pytestmark = pytest.mark.django_db(transaction=True)


SCREENSHOTS = Path(__file__).resolve().parents[2] / ".tmp" / "screenshots"
SECRET = "alice@example.com"


def staff(django_user_model, username: str, codenames: list[str]):
    user = django_user_model.objects.create_user(username=username, password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="django_workhorse", codename__in=codenames
        )
    )
    return user


def log_in(context, base: str, username: str):
    page = context.new_page()
    page.goto(f"{base}/admin/login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", "pw")
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/admin/")
    return page


def screenshot(page, name: str) -> Path:
    """A full-page PNG under .tmp/screenshots/, kept after the test."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.read_bytes().startswith(b"\x89PNG"), f"{path} is not a PNG"
    return path


def private_jobs() -> list[int]:
    """Jobs that carry SECRET in their payload, error, result, checkpoint and
    a cancel's reason (an event's details)."""
    failed = FailedJobFactory(
        queue="private",
        payload={"a": SECRET, "b": 2},
        error={
            "type": "builtins.ValueError",
            "message": f"no mailbox {SECRET}",
            "traceback": f"Traceback (most recent call last):\nValueError: no mailbox {SECRET}",
        },
    )
    done = ActiveJobFactory(queue="private")
    with connection.cursor() as cursor:
        store.write_checkpoint(
            cursor, done.id, done.worker, done.fence, "send", json.dumps({"to": SECRET})
        )
        store.succeed_many(cursor, done.worker, [done.id], [done.fence], [json.dumps(SECRET)])
    running = ActiveJobFactory(queue="private")
    Admin().cancel(running.id, reason=f"asked by {SECRET}")
    return [failed.id, done.id, running.id]


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
    screenshot(page, "workers-1280")

    first.stop()
    assert listed() == 1
    assert str(second.pid) in page.locator("#wh-workers").inner_text()
    second.stop()
