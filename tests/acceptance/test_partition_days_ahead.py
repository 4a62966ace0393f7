"""``PARTITION_DAYS_AHEAD``: a worker keeps the history partitions created
that many days ahead (UTC days), starting when it starts."""

from __future__ import annotations

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])

AHEAD = 20
PARENTS = ("workhorse_job_event", "workhorse_attempt_history")


def partitions_ahead(first: int, last: int) -> dict[int, list[str]]:
    """Days from today (UTC) between ``first`` and ``last`` whose partitions exist."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT d, array_agg(p ORDER BY p)
            FROM generate_series(%s, %s) AS d,
                 unnest(%s::text[]) AS p
            WHERE to_regclass(p || '_p' || to_char((now() AT TIME ZONE 'UTC')::date + d,
                                                   'YYYYMMDD')) IS NOT NULL
            GROUP BY d
            """,
            [first, last, list(PARENTS)],
        )
        return dict(cursor.fetchall())


@pytest.fixture
def drop_far_partitions():
    """Drop what the test created beyond the partitions every worker keeps."""
    yield
    with connection.cursor() as cursor:
        for day, parents in partitions_ahead(10, AHEAD + 5).items():
            for parent in parents:
                cursor.execute(
                    "SELECT %s || '_p'"
                    " || to_char((now() AT TIME ZONE 'UTC')::date + %s, 'YYYYMMDD')",
                    [parent, day],
                )
                cursor.execute(f'DROP TABLE IF EXISTS "{cursor.fetchone()[0]}"')


def test_a_worker_creates_history_partitions_that_many_days_ahead(
    start_worker, drop_far_partitions
):
    assert partitions_ahead(AHEAD - 2, AHEAD + 1) == {}

    worker = start_worker(
        "--burst",
        "--queues",
        "jobtests.record",
        settings={"PARTITION_DAYS_AHEAD": AHEAD},
        ready=False,
    )
    assert worker.wait_exit(60) == 0, worker.stderr

    found = partitions_ahead(0, AHEAD + 1)
    assert sorted(found) == list(range(AHEAD + 1))  # today and the next AHEAD days
    assert all(parents == sorted(PARENTS) for parents in found.values())
