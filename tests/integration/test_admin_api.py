"""``workhorse.Admin``'s reads: the timeline, the job list over job_query, and
the queue statistics, against real rows made by the real SQL functions."""

from __future__ import annotations

import json
import math
from datetime import timedelta

import pytest
from django.db import connection

from django_workhorse import Admin, InvalidCursorError, InvalidQueryError
from django_workhorse.db import store
from tests.factories import (
    ActiveJobFactory,
    FailedJobFactory,
    ReadyJobFactory,
    ScheduledJobFactory,
    SucceededJobFactory,
)
from tests.helpers import poll_until

transactional = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


def fail_once_then_stall_then_succeed(queue: str) -> int:
    """A job whose first attempt fails, second stalls and third succeeds, each
    step its own transaction (as a worker makes them). The first attempt's
    rows are then moved a day back, into yesterday's partitions."""
    job = ActiveJobFactory(queue=queue, worker="w-fail", max_attempts=3)
    with connection.cursor() as cursor:
        (failed,) = store.fail_many(
            cursor,
            "w-fail",
            [job.id],
            [job.fence],
            [
                json.dumps(
                    {
                        "type": "ValueError",
                        "message": "boom",
                        "traceback": "Traceback (most recent call last):\nValueError: boom",
                    }
                )
            ],
            ["failed"],
            [True],
            [0.0],
        )
        assert failed.will_retry
        # Yesterday's partitions exist (ensure_partitions starts a day back);
        # updating the partition key moves each row into its day's partition.
        cursor.execute(
            "UPDATE workhorse_job_event SET at = at - interval '1 day' WHERE job_id = %s", [job.id]
        )
        cursor.execute(
            "UPDATE workhorse_job SET created_at = created_at - interval '1 day' WHERE id = %s",
            [job.id],
        )
        cursor.execute(
            "UPDATE workhorse_attempt_history SET started_at = started_at - interval '1 day',"
            " finished_at = finished_at - interval '1 day' WHERE job_id = %s",
            [job.id],
        )
        (claimed,) = store.claim_many(cursor, "w-stall", [queue], [1], 0.01)
        poll_until(
            lambda: [r.job_id for r in store.recover_stalled(cursor)] == [job.id],
            timeout=10,
            interval=0.02,
            what="the stalled claim to be recovered",
        )
        (claimed,) = store.claim_many(cursor, "w-ok", [queue], [1], 30)
        assert store.succeed_many(cursor, "w-ok", [job.id], [claimed.fence], ['{"ok": 1}']) == [
            (job.id, True)
        ]
    return job.id


@transactional
def test_a_job_that_failed_stalled_and_succeeded_shows_every_step_in_order_across_partitions():
    job_id = fail_once_then_stall_then_succeed("timeline")

    entries = Admin().get_job_timeline(job_id).items

    assert [(e.source, e.kind, e.attempt) for e in entries] == [
        ("event", "enqueued", 0),
        ("event", "claimed", 1),
        ("attempt", "failed", 1),
        ("event", "retry_scheduled", 1),
        ("event", "claimed", 2),
        ("attempt", "stalled", 2),
        ("event", "stalled", 2),
        ("event", "claimed", 2),
        ("attempt", "succeeded", 2),
        ("event", "succeeded", 2),
    ]
    assert [e.at for e in entries] == sorted(e.at for e in entries)
    failed = entries[2]
    assert failed.worker_id == "w-fail" and failed.duration is not None and failed.duration >= 0
    assert failed.error["traceback"].endswith("ValueError: boom")
    assert entries[5].worker_id == "w-stall" and entries[5].error["type"] == "LeaseExpired"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(DISTINCT tableoid) FROM workhorse_job_event WHERE job_id = %s"
            " AND tableoid::regclass::text ~ '_p[0-9]{8}$'",
            [job_id],
        )
        assert cursor.fetchone()[0] == 2


@transactional
def test_the_timeline_pages_by_cursor_without_gaps_or_repeats():
    job_id = fail_once_then_stall_then_succeed("timeline-pages")
    admin = Admin()
    whole = admin.get_job_timeline(job_id).items

    paged, cursor = [], None
    while True:
        page = admin.get_job_timeline(job_id, cursor=cursor, limit=3)
        paged.extend(page.items)
        cursor = page.next_cursor
        if cursor is None:
            break

    assert paged == whole


@pytest.mark.django_db
def test_a_timeline_cursor_that_was_tampered_with_or_is_for_another_job_is_refused():
    first, second = SucceededJobFactory(), SucceededJobFactory()
    admin = Admin()
    cursor = admin.get_job_timeline(first.id, limit=1).next_cursor
    assert cursor is not None

    with pytest.raises(InvalidCursorError, match="first page"):
        admin.get_job_timeline(first.id, cursor="garbage")
    with pytest.raises(InvalidCursorError):
        admin.get_job_timeline(first.id, cursor=cursor[:-2] + "xx")
    with pytest.raises(InvalidCursorError):
        admin.get_job_timeline(second.id, cursor=cursor)


@pytest.mark.django_db
def test_the_job_list_is_newest_first_and_pages_older_and_back_newer():
    ids = [ReadyJobFactory(queue="listing").id for _ in range(7)]
    admin = Admin()

    first = admin.list_jobs(queue="listing", limit=3)
    second = admin.list_jobs(queue="listing", limit=3, cursor=first.next_cursor)
    third = admin.list_jobs(queue="listing", limit=3, cursor=second.next_cursor)
    back = admin.list_jobs(queue="listing", limit=3, cursor=second.previous_cursor)

    newest_first = ids[::-1]
    assert [j.id for j in first.items] == newest_first[0:3]
    assert first.previous_cursor is None
    assert [j.id for j in second.items] == newest_first[3:6]
    assert [j.id for j in third.items] == newest_first[6:7] and third.next_cursor is None
    assert [j.id for j in back.items] == newest_first[0:3] and back.previous_cursor is None


@pytest.mark.django_db
def test_the_job_list_filters_by_state_from_runtime_or_outcome():
    failed = FailedJobFactory(queue="states")  # claimed first: a claim takes any ready job
    succeeded = SucceededJobFactory(queue="states")
    ready = ReadyJobFactory(queue="states")
    scheduled = ScheduledJobFactory(queue="states")
    admin = Admin()

    def ids(state):
        return [j.id for j in admin.list_jobs(queue="states", state=state).items]

    assert ids("ready") == [ready.id]
    assert ids("scheduled") == [scheduled.id]
    assert ids("failed") == [failed.id]
    assert ids("succeeded") == [succeeded.id]
    assert ids("active") == []
    row = admin.list_jobs(state="failed", queue="states").items[0]
    assert (row.state, row.attempt, row.max_attempts, row.finished_at is not None) == (
        "failed",
        1,
        3,
        True,
    )


@pytest.mark.django_db
def test_the_job_list_filters_by_name_and_finds_an_idempotency_key():
    keyed = ReadyJobFactory(queue="keys", idempotency_key="invoice-42")
    ReadyJobFactory(queue="keys")
    admin = Admin()

    assert [j.id for j in admin.list_jobs(idempotency_key="invoice-42").items] == [keyed.id]
    assert len(admin.list_jobs(name="demo.jobs.add", queue="keys").items) == 2
    assert admin.list_jobs(name="no.such.job").items == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"state": "bogus"}, "state must be one of"),
        ({"queue": "q\x00"}, "is not a queue name"),
        ({"queue": "email\n"}, "is not a queue name"),
        ({"name": "x y"}, "is not a job name"),
        ({"limit": 0}, "limit must be"),
        ({"idempotency_key": "a\x00b"}, "idempotency key"),
        ({"idempotency_key": "a\ud800"}, "idempotency key"),
        ({"cursor": "garbage"}, "not issued by this server"),
        # repr() of an int of more than 4,300 digits raises ValueError.
        ({"limit": 10**5000}, "limit must be .* got an integer of about 5000 digits"),
        ({"state": 10**5000}, "state must be one of"),
        ({"cursor": 10**5000}, "not issued by this server"),
    ],
)
def test_a_bad_filter_is_refused_with_a_clear_error(kwargs, match):
    with pytest.raises(InvalidQueryError, match=match):
        Admin().list_jobs(**kwargs)


@pytest.mark.django_db
def test_a_malformed_job_id_is_a_clear_error_not_a_driver_error():
    with pytest.raises(InvalidQueryError, match="whole number"):
        Admin().get_job(2**64)
    with pytest.raises(InvalidQueryError, match="got an integer of about 5000 digits"):
        Admin().cancel(10**5000)
    with pytest.raises(InvalidQueryError):
        Admin().get_job_timeline("1")


@pytest.mark.parametrize("ids", [None, 7, "12"])
def test_get_jobs_given_no_list_of_ids_is_a_clear_error(ids):
    with pytest.raises(InvalidQueryError, match="job ids are a list of whole numbers"):
        Admin().get_jobs(ids)


@pytest.mark.django_db
def test_queue_stats_with_a_count_limit_stop_counting_and_say_which_states_reached_it():
    for _ in range(4):
        ReadyJobFactory(queue="deep")
    ScheduledJobFactory(queue="deep")

    (deep,) = [q for q in Admin().queue_stats(count_limit=3) if q.name == "deep"]

    assert (deep.counts["ready"], deep.counts["scheduled"]) == (3, 1)
    assert deep.capped == frozenset({"ready"})
    (exact,) = [q for q in Admin().queue_stats() if q.name == "deep"]
    assert exact.counts["ready"] == 4 and exact.capped == frozenset()


@pytest.mark.django_db
def test_queue_stats_find_the_oldest_ready_job_across_priorities():
    ReadyJobFactory(queue="levels", priority=5)
    ReadyJobFactory(queue="levels", priority=-3)
    ReadyJobFactory(queue="levels", priority=0)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE workhorse_job_runtime SET run_at = now() - interval '1 hour'"
            " WHERE queue = 'levels' AND priority = -3"
        )

    (levels,) = [q for q in Admin().queue_stats(count_limit=1) if q.name == "levels"]

    assert 3599 < levels.oldest_ready_age < 3700


@pytest.mark.django_db
def test_queue_stats_show_a_queues_limits_and_a_policy_row_without_jobs():
    Admin().set_queue_limits("email", global_concurrency=2, rate=10, period=60)

    (limited,) = [q for q in Admin().queue_stats() if q.name == "email"]

    assert (limited.concurrency_limit, limited.rate_limit, limited.rate_period) == (2, 10, 60.0)
    assert sum(limited.counts.values()) == 0


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10", True, 2**31])
def test_queue_stats_refuse_a_count_limit_that_is_not_a_positive_whole_number(bad):
    with pytest.raises(InvalidQueryError, match="count_limit"):
        Admin().queue_stats(count_limit=bad)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"window_seconds": "3600"}, r"window_seconds: expected seconds"),
        ({"window_seconds": math.nan}, r"window_seconds: expected a finite number"),
        ({"window_seconds": 0}, r"window_seconds must be more than 0"),
        ({"window_seconds": -60}, r"window_seconds must be more than 0"),
        ({"window_seconds": 1e300}, r"window_seconds must be more than 0 .* and at most"),
        # Shorter than PostgreSQL's microsecond: it became a 0 interval and
        # the function's DataError.
        (
            {"window_seconds": 1e-9},
            r"window_seconds must be more than 0 \(at least 1 microsecond\)",
        ),
        ({"buckets": 0}, r"buckets must be a whole number from 1 to 1000, got 0"),
        ({"buckets": -1}, r"buckets must be a whole number"),
        ({"buckets": 1.5}, r"buckets must be a whole number"),
        ({"buckets": "12"}, r"buckets must be a whole number"),
        ({"buckets": 10**6}, r"buckets must be a whole number"),
    ],
)
def test_queue_stats_refuse_a_bad_window_or_bucket_count_before_any_sql(kwargs, match):
    """Bug: these reached workhorse_queue_stats_v1 and raised a DataError or a
    ProgrammingError that also aborted the caller's transaction."""
    SucceededJobFactory(queue="stats-window")  # a finished job: width_bucket runs on it

    with pytest.raises(InvalidQueryError, match=match):
        Admin().queue_stats(**kwargs)

    with connection.cursor() as cursor:  # the transaction still runs queries
        cursor.execute("SELECT 1")


@pytest.mark.django_db
def test_queue_stats_take_the_window_as_a_timedelta():
    SucceededJobFactory(queue="stats-window")

    (stats,) = [
        q for q in Admin().queue_stats(timedelta(minutes=10), buckets=2) if q.name == "stats-window"
    ]

    assert (stats.window_seconds, stats.finished_per_bucket) == (600.0, [0, 1])


@pytest.mark.django_db
def test_queue_stats_count_live_states_and_recent_finishes():
    ReadyJobFactory(queue="stats")
    ReadyJobFactory(queue="stats")
    ScheduledJobFactory(queue="stats")
    ActiveJobFactory(queue="stats-busy")
    FailedJobFactory(queue="stats-busy")
    SucceededJobFactory(queue="stats-busy")

    stats = {q.name: q for q in Admin().queue_stats()}

    assert stats["stats"].counts == {
        "blocked": 0,
        "scheduled": 1,
        "ready": 2,
        "active": 0,
        "succeeded": 0,
        "failed": 0,
        "canceled": 0,
    }
    assert stats["stats"].oldest_ready_age is not None and not stats["stats"].paused
    busy = stats["stats-busy"]
    assert (busy.counts["active"], busy.counts["failed"], busy.counts["succeeded"]) == (1, 1, 1)
    assert busy.finished_in_window == 2 and len(busy.finished_per_bucket) == 12
    assert busy.oldest_ready_age is None


@transactional
def test_the_timeline_shows_what_a_transaction_older_than_the_job_did_to_it(pg_connect):
    """A row's time is its transaction's start: a cancel from a transaction that
    began before the job was enqueued is stamped earlier than the job's
    creation, and the timeline still shows it."""
    from demo.jobs import add
    from django.db import transaction

    producer = pg_connect()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT now()")  # this transaction's clock starts here
        (job_id,) = producer.execute(
            "SELECT job_id FROM workhorse_enqueue_v1(%s, 'timeline-q', '{}')", [add.name]
        ).fetchone()
        assert Admin().cancel(job_id).status == "changed"

    kinds = [(e.source, e.kind) for e in Admin().get_job_timeline(job_id).items]
    assert ("event", "canceled") in kinds
    assert ("event", "enqueued") in kinds


@pytest.mark.django_db
def test_a_job_list_cursor_is_refused_by_a_list_with_other_filters():
    for _ in range(3):
        ReadyJobFactory(queue="cursor-a")
        ReadyJobFactory(queue="cursor-b")
    page = Admin().list_jobs(queue="cursor-a", limit=1)
    assert page.next_cursor is not None

    assert Admin().list_jobs(queue="cursor-a", cursor=page.next_cursor, limit=1).items
    with pytest.raises(InvalidCursorError):
        Admin().list_jobs(queue="cursor-b", cursor=page.next_cursor, limit=1)
    with pytest.raises(InvalidCursorError):
        Admin().list_jobs(cursor=page.next_cursor, limit=1)


@pytest.mark.django_db
def test_a_signed_cursor_with_an_id_out_of_range_is_refused_before_any_sql():
    from django.core import signing

    from django_workhorse.operations.admin_api import list_cursor

    job = ReadyJobFactory()
    huge = list_cursor("older", 2**63)
    timeline = signing.dumps(
        [job.id, "2026-01-01T00:00:00+00:00", 0, 2**64], salt="workhorse.timeline"
    )

    with pytest.raises(InvalidCursorError):
        Admin().list_jobs(cursor=huge)
    with pytest.raises(InvalidCursorError):
        Admin().get_job_timeline(job.id, cursor=timeline)
