"""The queue dashboard's counters of finished jobs: kept by the statement
that ends the jobs (one row per queue and minute, not per job), read by
``Admin.queue_stats``, and retired with the history."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from django_workhorse import Admin
from django_workhorse.core.conf import RetentionSettings
from django_workhorse.db import store
from django_workhorse.operations.retention import prune
from tests.factories import (
    ActiveJobFactory,
    FailedJobFactory,
    ReadyJobFactory,
    SucceededJobFactory,
)

transactional = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


def counter_rows(queue: str) -> list[tuple[int, int, int]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT succeeded, failed, canceled FROM workhorse_queue_minute WHERE queue = %s",
            [queue],
        )
        return cursor.fetchall()


def stats_of(queue: str, **kwargs):
    (stats,) = [q for q in Admin().queue_stats(**kwargs) if q.name == queue]
    return stats


@pytest.mark.django_db
def test_a_batch_of_successes_adds_one_counter_row_for_its_queue_not_one_per_job():
    jobs = [ReadyJobFactory(queue="counted") for _ in range(3)]
    with connection.cursor() as cursor:
        claimed = store.claim_many(cursor, "w-count", ["counted"], [3], 30.0)
        store.succeed_many(
            cursor,
            "w-count",
            [c.job_id for c in claimed],
            [c.fence for c in claimed],
            ["null"] * 3,
        )

    assert sorted(c.job_id for c in claimed) == sorted(j.id for j in jobs)
    assert counter_rows("counted") == [(3, 0, 0)]


@pytest.mark.django_db
def test_failures_and_cancels_are_counted_in_their_own_columns():
    FailedJobFactory(queue="mixed")
    FailedJobFactory(queue="mixed")
    SucceededJobFactory(queue="mixed")
    Admin().cancel(ReadyJobFactory(queue="mixed").id)

    stats = stats_of("mixed")

    assert (stats.counts["succeeded"], stats.counts["failed"], stats.counts["canceled"]) == (
        1,
        2,
        1,
    )
    assert stats.finished_in_window == 4 and stats.finished_per_bucket[-1] == 4


@pytest.mark.django_db
def test_finishes_of_minutes_before_the_window_are_not_counted():
    SucceededJobFactory(queue="old-minutes")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE workhorse_queue_minute SET minute = minute - interval '2 hours'"
            " WHERE queue = 'old-minutes'"
        )
    ReadyJobFactory(queue="old-minutes")  # keeps the queue on the page

    stats = stats_of("old-minutes")

    assert stats.finished_in_window == 0 and stats.counts["succeeded"] == 0
    assert stats_of("old-minutes", window_seconds=3 * 3600).counts["succeeded"] == 1


@pytest.mark.django_db
def test_the_counts_stay_when_the_jobs_are_retried_or_pruned():
    """They count finishes, not outcome rows: a retry does not take one back."""
    failed = FailedJobFactory(queue="retried-count")
    Admin().retry(failed.id)

    assert stats_of("retried-count").counts["failed"] == 1


@pytest.mark.django_db
def test_a_failure_is_counted_by_job_name_and_error_type():
    FailedJobFactory(queue="why", error={"type": "builtins.ValueError", "message": "a"})
    last = FailedJobFactory(queue="why", error={"type": "builtins.ValueError", "message": "b"})
    FailedJobFactory(queue="why", error={"type": "builtins.KeyError", "message": "c"})
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name, error_type, sum(failures), max(last_job_id) FROM workhorse_failure_hour"
            " GROUP BY name, error_type ORDER BY error_type"
        )
        rows = cursor.fetchall()

    assert rows[0][:3] == ("demo.jobs.add", "builtins.KeyError", 1)
    assert rows[1] == ("demo.jobs.add", "builtins.ValueError", 2, last.id)


@pytest.mark.django_db
def test_a_lost_lease_counts_nothing():
    job = ActiveJobFactory(queue="lost")
    with connection.cursor() as cursor:
        store.succeed_many(cursor, "someone-else", [job.id], [job.fence], [json.dumps(1)])

    assert counter_rows("lost") == []


@transactional
def test_retention_deletes_the_counters_of_minutes_past_the_history_window():
    SucceededJobFactory(queue="aged-counters")
    FailedJobFactory(queue="aged-counters")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE workhorse_queue_minute SET minute = minute - interval '8 days'"
            " WHERE queue = 'aged-counters'"
        )
        cursor.execute("UPDATE workhorse_failure_hour SET hour = hour - interval '8 days'")
        SucceededJobFactory(queue="aged-counters")

        prune(
            cursor,
            settings=RetentionSettings(
                history=7 * 86400, finished_jobs=None, interval=None, batch_size=100
            ),
        )

        cursor.execute("SELECT count(*) FROM workhorse_failure_hour")
        assert cursor.fetchone() == (0,)
    assert counter_rows("aged-counters") == [(1, 0, 0)]
