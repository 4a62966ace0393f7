"""``Admin().list_jobs(limit=1000)``, the largest page, works like any other:
it pages through every job and says whether there is more (the SQL function
pages at most 1,000 rows, so the row past a full page is asked for alone)."""

from __future__ import annotations

import pytest

import django_workhorse as workhorse
from django_workhorse.operations.admin_api import MAX_PAGE

pytestmark = pytest.mark.django_db


@workhorse.job(queue="tests.largest_page", name="tests.largest_page.noop")
def noop(n: int) -> None:
    """Never run: the jobs only fill the list."""


def test_a_page_of_the_largest_size_pages_through_every_job():
    ids = [h.id for h in noop.enqueue_many([{"n": n} for n in range(MAX_PAGE + 1)])]
    admin = workhorse.Admin()

    first = admin.list_jobs(queue=noop.queue, limit=MAX_PAGE)
    assert [row.id for row in first.items] == sorted(ids, reverse=True)[:MAX_PAGE]
    assert first.previous_cursor is None and first.next_cursor is not None

    last = admin.list_jobs(queue=noop.queue, limit=MAX_PAGE, cursor=first.next_cursor)
    assert [row.id for row in last.items] == [min(ids)]
    assert last.next_cursor is None and last.previous_cursor is not None

    back = admin.list_jobs(queue=noop.queue, limit=MAX_PAGE, cursor=last.previous_cursor)
    assert [row.id for row in back.items] == [row.id for row in first.items]
    assert back.previous_cursor is None


def test_a_page_of_the_largest_size_that_holds_every_job_has_no_older_page():
    noop.enqueue_many([{"n": n} for n in range(MAX_PAGE)])

    page = workhorse.Admin().list_jobs(queue=noop.queue, limit=MAX_PAGE)

    assert len(page.items) == MAX_PAGE
    assert page.next_cursor is None and page.previous_cursor is None
