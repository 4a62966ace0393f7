"""A job enqueued and run inside one transaction (``run_jobs()`` in a test's
transaction) has one database time for everything: its timeline must still
read its events in the order they happened, and page through all of them."""

from __future__ import annotations

import pytest
from demo.jobs import add, send_welcome_email, sleep_once

from django_workhorse import Admin
from django_workhorse.testing import run_jobs

pytestmark = pytest.mark.django_db


def entries(job_id: int, limit: int = 100) -> list[tuple[str, str, int]]:
    found, cursor = [], None
    while True:
        page = Admin().get_job_timeline(job_id, cursor=cursor, limit=limit)
        found += [(e.source, e.kind, e.attempt) for e in page.items]
        cursor = page.next_cursor
        if cursor is None:
            return found


def events(job_id: int) -> list[tuple[str, int]]:
    return [(kind, attempt) for source, kind, attempt in entries(job_id) if source == "event"]


def test_a_plain_run_reads_its_claim_before_its_success():
    handle = add.enqueue(a=1, b=2)
    run_jobs()

    assert events(handle.id) == [("enqueued", 0), ("claimed", 1), ("succeeded", 1)]


def test_paging_one_row_at_a_time_loses_nothing():
    handle = add.enqueue(a=1, b=2)
    run_jobs()

    assert entries(handle.id, limit=1) == entries(handle.id)
    assert len(entries(handle.id)) == 4


def test_a_retried_run_reads_each_claim_before_what_its_attempt_did():
    handle = send_welcome_email.enqueue(user_id=1, flaky=1)
    run_jobs()

    # run_jobs() brings the retry forward (made_due) and the claim promotes it.
    assert events(handle.id) == [
        ("enqueued", 0),
        ("claimed", 1),
        ("retry_scheduled", 1),
        ("made_due", 1),
        ("promoted", 1),
        ("claimed", 2),
        ("succeeded", 2),
    ]
    assert entries(handle.id, limit=1) == entries(handle.id)


def test_a_run_that_slept_reads_each_claim_before_what_it_did():
    handle = sleep_once.enqueue()
    run_jobs()

    # The sleep gives its attempt back: both runs are attempt 1.
    assert events(handle.id) == [
        ("enqueued", 0),
        ("claimed", 1),
        ("slept", 1),
        ("claimed", 1),
        ("succeeded", 1),
    ]
    assert entries(handle.id, limit=1) == entries(handle.id)


def test_a_run_released_by_a_name_filter_reads_in_order():
    other = add.options(queue="email").enqueue(a=1, b=2)
    wanted = send_welcome_email.enqueue(user_id=1)
    run_jobs(names=[send_welcome_email])
    run_jobs()

    assert [kind for kind, _ in events(other.id)] == [
        "enqueued",
        "claimed",
        "released",
        "claimed",
        "succeeded",
    ]
    assert [kind for kind, _ in events(wanted.id)] == ["enqueued", "claimed", "succeeded"]
    assert entries(other.id, limit=1) == entries(other.id)
