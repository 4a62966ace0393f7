"""Two stores in a real browser: the operator switches the job list and the
queues page to the second store, opens one of its jobs, and opens that job
again from its URL alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from demo.jobs import add
from django.contrib.auth.models import Permission

from django_workhorse.core.definitions import JobDefinition
from tests.factories import ReadyJobFactory
from tests.second_store import second_store

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "second"])


def report_on_second(n: int) -> int:
    """A job of the second store."""
    return n


@pytest.fixture(scope="module")
def second(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock(), second_store() as alias:
        yield alias


def log_in(context, base: str, django_user_model):
    user = django_user_model.objects.create_user(username="op", password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="django_workhorse",
            codename__in=[
                "view_job",
                "change_job",
                "view_queue",
                "change_queue",
                "view_job_payload",
            ],
        )
    )
    page = context.new_page()
    page.goto(f"{base}/admin/login/?next=/admin/")
    page.fill("#id_username", "op")
    page.fill("#id_password", "pw")
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/admin/")
    return page


def names(page) -> list[str]:
    return page.locator("#result_list tbody tr td:nth-child(3)").all_inner_texts()


def test_an_operator_switches_to_the_second_store_and_opens_its_job_by_url(
    browser, live_server, django_user_model, second, settings, tmp_path: Path
):
    settings.WORKHORSE = {**settings.WORKHORSE, "STORES": ["default", second]}
    on_second = JobDefinition(report_on_second, name="tests.browser.on_second", using=second)
    ReadyJobFactory(queue="browser-default", definition=add)
    job = ReadyJobFactory(queue="browser-second", definition=on_second, payload={"n": 7})
    base = live_server.url
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = log_in(context, base, django_user_model)

    page.goto(f"{base}/admin/django_workhorse/job/")
    assert page.locator("#wh-stores a.wh-on").inner_text() == "default"
    assert names(page) == ["demo.jobs.add"]

    page.click("#wh-stores a:text-is('second')")
    page.wait_for_url("**/job/?store=second")
    assert page.locator("#wh-stores a.wh-on").inner_text() == "second"
    assert names(page) == ["tests.browser.on_second"]
    page.screenshot(path=str(tmp_path / "second-store-jobs.png"), full_page=True)

    page.click(f"#result_list a:text-is('{job.id}')")
    page.wait_for_url(f"**/job/{job.id}/?store=second")
    assert "tests.browser.on_second" in page.locator("h1").inner_text()
    assert page.locator("#wh-payload").inner_text().strip() == '{\n  "n": 7\n}'

    page.goto(f"{base}/admin/django_workhorse/queue/?store=second")
    assert page.locator("#wh-queue-browser-second").count() == 1
    assert page.locator("#wh-queue-browser-default").count() == 0
    page.click("#wh-stores a:text-is('default')")
    page.wait_for_url("**/queue/?store=default")
    assert page.locator("#wh-queue-browser-default").count() == 1
    assert page.locator("#wh-queue-browser-second").count() == 0

    by_url = context.new_page()
    by_url.goto(f"{base}/admin/django_workhorse/job/{job.id}/?store=second")
    assert "tests.browser.on_second" in by_url.locator("h1").inner_text()
    assert by_url.locator("#wh-stores a.wh-on").inner_text() == "second"
    by_url.screenshot(path=str(tmp_path / "second-store-job.png"), full_page=True)

    missing = by_url.goto(f"{base}/admin/django_workhorse/job/{job.id}/?store=elsewhere")
    assert missing.status == 404
    assert "the stores are default, second" in by_url.locator("#wh-no-store").inner_text()
