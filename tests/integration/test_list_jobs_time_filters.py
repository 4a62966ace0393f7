"""``Admin.list_jobs(created_after=..., created_before=...)`` (docs/admin.md):
jobs created from ``created_after`` (included) up to ``created_before`` (not
included), newest first, with the other filters and across pages; a cursor
keeps its list's filters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from demo.jobs import add

import django_workhorse as workhorse
from django_workhorse import InvalidCursorError, InvalidQueryError

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


@pytest.fixture
def hourly(cursor) -> list[int]:
    """Four jobs of queue ``audit.times`` created an hour apart from T0, oldest first."""
    ids = [
        h.id
        for h in add.options(queue="audit.times").enqueue_many([{"a": i, "b": 0} for i in range(4)])
    ]
    for n, job_id in enumerate(ids):
        for table, column in (("workhorse_job", "id"), ("workhorse_job_query", "job_id")):
            cursor.execute(
                f"UPDATE {table} SET created_at = %s WHERE {column} = %s", [T0 + n * HOUR, job_id]
            )
    return ids


def listed(**filters) -> list[int]:
    return [row.id for row in workhorse.Admin().list_jobs(queue="audit.times", **filters).items]


def test_created_after_includes_its_instant_and_created_before_excludes_its_own(hourly):
    j0, j1, j2, j3 = hourly
    assert listed(created_after=T0 + HOUR) == [j3, j2, j1]
    assert listed(created_before=T0 + 2 * HOUR) == [j1, j0]
    assert listed(created_after=T0 + HOUR, created_before=T0 + 3 * HOUR) == [j2, j1]
    assert listed(created_after=T0 + 3 * HOUR, created_before=T0 + HOUR) == []


def test_the_time_filters_combine_with_the_state_filter(hourly):
    _j0, j1, j2, j3 = hourly
    assert workhorse.Admin().cancel(j2).status == "changed"
    assert listed(created_after=T0 + HOUR, state="ready") == [j3, j1]
    assert listed(created_after=T0 + HOUR, state="canceled") == [j2]


def test_pages_keep_the_time_filters_and_a_cursor_serves_only_its_own_list(hourly):
    j0, j1, j2, _j3 = hourly
    admin = workhorse.Admin()
    first = admin.list_jobs(queue="audit.times", created_before=T0 + 3 * HOUR, limit=2)
    assert [row.id for row in first.items] == [j2, j1]
    second = admin.list_jobs(
        queue="audit.times", created_before=T0 + 3 * HOUR, limit=2, cursor=first.next_cursor
    )
    assert [row.id for row in second.items] == [j0]
    with pytest.raises(InvalidCursorError):
        admin.list_jobs(queue="audit.times", created_before=T0 + 4 * HOUR, cursor=first.next_cursor)


@pytest.mark.parametrize("value", [datetime(2026, 3, 1), "2026-03-01", 1772366400])
def test_a_time_filter_must_be_an_aware_datetime(value):
    with pytest.raises(InvalidQueryError, match="created_after must be a timezone-aware datetime"):
        workhorse.Admin().list_jobs(created_after=value)


def test_a_time_filter_with_an_offset_of_a_fraction_of_a_second_is_read_in_utc(hourly, cursor):
    """Bug: PostgreSQL refused the offset (DataError), which aborted the caller's transaction."""
    odd = timezone(timedelta(seconds=30.5))
    assert listed(created_after=(T0 + 2 * HOUR).astimezone(odd)) == hourly[:1:-1]
    cursor.execute("SELECT 1")  # the transaction still runs queries


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"created_after": datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5)))}, "all"),
        ({"created_before": datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5)))}, "none"),
        (
            {"created_after": datetime(9999, 12, 31, 23, tzinfo=timezone(-timedelta(hours=5)))},
            "none",
        ),
    ],
)
def test_a_time_filter_beyond_the_years_python_can_hold_in_utc_still_filters(
    hourly, filters, expected
):
    assert listed(**filters) == (hourly[::-1] if expected == "all" else [])
