"""A worker row or a failure counter that Python cannot read, or that holds
what no worker writes, is shown as such, and the page answers (docs/admin.md:
no page answers a server error). Only a hand-written row holds one: a time
at ±infinity or in the year 10000 (timestamptz allows them, Python does not),
slots or busy that are not a whole number (info is any JSON)."""

from __future__ import annotations

import pytest
from django.db import connection

from django_workhorse import Admin
from tests.factories import FailedJobFactory, ReadyJobFactory, seen_worker

pytestmark = pytest.mark.django_db

WORKERS = "/admin/django_workhorse/queue/workers/"
QUEUES = "/admin/django_workhorse/queue/"
FAILURES = "/admin/django_workhorse/job/failures/"

HUGE = "9" * 5000  # valid jsonb, beyond Python's integer-string limit

WORKER_ROWS = {
    # what the UPDATE sets, and the words the page shows for it
    "slots text": ("info = jsonb_set(info, '{slots}', '\"many\"')", "slots 'many' is not"),
    "slots negative": ("info = jsonb_set(info, '{slots}', '-3')", "slots -3 is not"),
    "slots fraction": ("info = jsonb_set(info, '{slots}', '2.5')", "slots 2.5 is not"),
    "slots huge": (
        "info = jsonb_set(info, '{slots}', '123456789012345678901234567890')",
        "slots 123456789012345678901234567890 is not",
    ),
    "slots list": ("info = jsonb_set(info, '{slots}', '[1]')", "slots [1] is not"),
    "busy bool": ("info = jsonb_set(info, '{busy}', 'true')", "busy True is not"),
    "busy object": ("info = jsonb_set(info, '{busy}', '{\"a\": 1}')", "busy {'a': 1} is not"),
    "info digits": (
        f"info = jsonb_set(info, '{{busy}}', '{HUGE}')",
        "its info cannot be read by Python's JSON decoder",
    ),
    "first seen +infinity": (
        "first_seen_at = 'infinity'",
        "first_seen_at infinity is outside the years 1 to 9999",
    ),
    "first seen -infinity": (
        "first_seen_at = '-infinity'",
        "first_seen_at -infinity is outside the years 1 to 9999",
    ),
    "first seen year 10000": (
        "first_seen_at = '10000-01-01 00:00:00+00'",
        "first_seen_at 10000-01-01 00:00:00+00 is outside the years 1 to 9999",
    ),
    "last seen +infinity": (
        "last_seen_at = 'infinity'",
        "last_seen_at infinity is outside the years 1 to 9999",
    ),
    "last seen year 10000": (
        "last_seen_at = '10000-01-01 00:00:00+00'",
        "last_seen_at 10000-01-01 00:00:00+00 is outside the years 1 to 9999",
    ),
}


def write_by_hand(table: str, assignment: str, where: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL TIME ZONE 'UTC'; UPDATE {table} SET {assignment} WHERE {where}")


def row_of(body: str, text: str) -> str:
    """The table row of the page that holds ``text``."""
    (row,) = [row for row in body.split("<tr")[1:] if text in row]
    return row


@pytest.mark.parametrize(("assignment", "shown"), WORKER_ROWS.values(), ids=WORKER_ROWS.keys())
def test_the_workers_page_shows_a_worker_row_it_cannot_read_as_unreadable(
    operator_client, assignment, shown
):
    seen_worker("host-a:1:broken")
    seen_worker("host-b:2:fine")
    write_by_hand("workhorse_worker", assignment, "worker_id = 'host-a:1:broken'")

    page = operator_client.get(WORKERS)

    assert page.status_code == 200
    body = page.content.decode().replace("&#x27;", "'")
    broken = row_of(body, "host-a:1:broken")
    assert ">unreadable</span>" in broken
    assert shown in broken
    assert "next heartbeat" in broken  # and the fix
    fine = row_of(body, "host-b:2:fine")
    assert ">live</span>" in fine and "0 / 2" in fine


@pytest.mark.parametrize(("assignment", "shown"), WORKER_ROWS.values(), ids=WORKER_ROWS.keys())
def test_the_queues_page_answers_with_a_worker_row_it_cannot_read(
    operator_client, assignment, shown
):
    ReadyJobFactory(queue="mail")
    seen_worker("host-a:1:broken")
    write_by_hand("workhorse_worker", assignment, "worker_id = 'host-a:1:broken'")

    page = operator_client.get(QUEUES)

    assert page.status_code == 200
    assert 'id="wh-queue-mail"' in page.content.decode()


def test_a_worker_whose_last_heartbeat_cannot_be_read_does_not_count_as_serving(
    operator_client,
):
    seen_worker("host-a:1:broken", {"page-unreadable": 2})
    write_by_hand("workhorse_worker", "last_seen_at = 'infinity'", "true")

    (worker,) = Admin().live_workers()

    assert (worker.last_seen_at, worker.seen_seconds_ago, worker.silent) == (None, None, True)
    assert worker.slots == 2


FAILURE_COUNTERS = {
    "last at +infinity": ("last_at = 'infinity'", "last_at infinity is outside the years 1"),
    "last at year 10000": (
        "last_at = '10000-01-01 00:00:00+00'",
        "last_at 10000-01-01 00:00:00+00 is outside the years 1",
    ),
    "last at -infinity": ("last_at = '-infinity'", "last_at -infinity is outside the years 1"),
}


@pytest.mark.parametrize(
    ("assignment", "shown"), FAILURE_COUNTERS.values(), ids=FAILURE_COUNTERS.keys()
)
def test_the_failures_page_shows_a_counter_it_cannot_read_as_unreadable(
    operator_client, assignment, shown
):
    FailedJobFactory(queue="counted", error={"type": "broken.Error", "message": "m"})
    FailedJobFactory(queue="counted", error={"type": "fine.Error", "message": "m"})
    write_by_hand("workhorse_failure_hour", assignment, "error_type = 'broken.Error'")

    page = operator_client.get(FAILURES)

    assert page.status_code == 200
    body = page.content.decode()
    broken = row_of(body, "broken.Error")
    assert ">unreadable</span>" in broken and shown in broken
    fine = row_of(body, "fine.Error")
    assert "unreadable" not in fine


def test_failure_counts_past_bigint_are_shown_clamped(operator_client):
    FailedJobFactory(queue="counted", error={"type": "many.Error", "message": "m"})
    with connection.cursor() as cursor:
        # A second shard of the same hour, name and error type: their sum
        # is past bigint.
        cursor.execute(
            "INSERT INTO workhorse_failure_hour"
            " SELECT hour, name, error_type, shard + 1, 9223372036854775807, last_job_id,"
            " last_at FROM workhorse_failure_hour WHERE error_type = 'many.Error'"
        )

    page = operator_client.get(FAILURES)

    assert page.status_code == 200
    (group,) = [g for g in Admin().failures() if g.error_type == "many.Error"]
    assert group.failures == 9223372036854775807
