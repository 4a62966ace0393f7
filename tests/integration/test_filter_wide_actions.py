"""Counting the jobs a filter matches (capped) and acting on all of them in
bounded batches: ``Admin.count_jobs`` and ``Admin.bulk_matching``."""

from __future__ import annotations

import pytest
from demo.jobs import add
from django.db import connection

from django_workhorse import Admin, InvalidQueryError
from tests.factories import FailedJobFactory, ReadyJobFactory, SucceededJobFactory

pytestmark = pytest.mark.django_db


def test_a_page_of_a_thousand_jobs_can_be_listed():
    """Bug: list_jobs(limit=1000) asked the SQL for 1,001 rows, which it refused."""
    add.options(queue="thousand").enqueue_many([{"a": i, "b": 0} for i in range(1001)])

    page = Admin().list_jobs(queue="thousand", limit=1000)

    assert len(page.items) == 1000 and page.next_cursor is not None


def test_count_jobs_counts_each_state_of_a_queue_up_to_the_cap():
    FailedJobFactory(queue="counted")  # first: its factory claims from the queue
    for _ in range(3):
        ReadyJobFactory(queue="counted")
    SucceededJobFactory(queue="elsewhere")
    admin = Admin()

    assert admin.count_jobs(queue="counted", state="ready") == 3
    assert admin.count_jobs(queue="counted", state="ready", cap=2) == 2
    assert admin.count_jobs(queue="counted", state="failed") == 1
    assert admin.count_jobs(queue="counted") == 4
    assert admin.count_jobs(queue="counted", state="succeeded") == 0
    assert admin.count_jobs(name="demo.jobs.add", state="ready") == 3
    assert admin.count_jobs(name="demo.jobs.other", state="ready") == 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"state": "done"}, "state must be one of"),
        ({"cap": 0}, "cap must be"),
        ({"queue": "a b"}, "queue"),
    ],
)
def test_count_jobs_refuses_a_bad_filter_naming_it(kwargs, match):
    with pytest.raises(InvalidQueryError, match=match):
        Admin().count_jobs(**kwargs)


def test_bulk_matching_cancels_every_matching_job_in_batches_of_the_given_size():
    add.options(queue="drain-me").enqueue_many([{"a": i, "b": 0} for i in range(25)])
    kept = ReadyJobFactory(queue="keep-me")

    outcome = Admin().bulk_matching(
        "cancel", queue="drain-me", state="ready", reason="bad deploy", by="ops", batch_size=10
    )

    assert (outcome.changed, outcome.unchanged, outcome.batches) == (25, 0, 3)
    assert Admin().count_jobs(queue="drain-me", state="canceled") == 25
    assert Admin().get_job(kept.id).state == "ready"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT error ->> 'reason', error ->> 'by' FROM workhorse_job_outcome o"
            " JOIN workhorse_job j ON j.id = o.job_id WHERE j.queue = 'drain-me'"
        )
        assert cursor.fetchall() == [("bad deploy", "ops")]


def test_bulk_matching_retries_the_failed_jobs_of_a_name_and_stops_at_a_limit():
    failed = [FailedJobFactory(queue="retry-me") for _ in range(4)]

    outcome = Admin().bulk_matching("retry", queue="retry-me", state="failed", limit=3)

    assert (outcome.changed, outcome.complete) == (3, False)
    states = sorted(Admin().get_job(j.id).state for j in failed)
    assert states == ["failed", "ready", "ready", "ready"]


def test_bulk_matching_refuses_an_unknown_action_before_touching_anything():
    ReadyJobFactory(queue="untouched")

    with pytest.raises(InvalidQueryError, match="'retry' or 'cancel'"):
        Admin().bulk_matching("delete", queue="untouched")

    assert Admin().count_jobs(queue="untouched", state="ready") == 1
