"""Retention: ``workhorse_prune`` drops whole history partitions past the
window, deletes finished jobs past theirs in bounded batches, never touches a
live job, changes nothing on a dry run, and runs one at a time.

Days cannot pass in a test, so history is aged by moving its timestamps
back (an UPDATE of the partition key moves each row into that day's
partition), exactly where the days would have put it.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from django_workhorse.core.conf import RetentionSettings, retention_problems
from django_workhorse.operations.retention import prune
from django_workhorse.worker.retention_turn import RetentionSweeper
from tests.factories import (
    ActiveJobFactory,
    ReadyJobFactory,
    ScheduledJobFactory,
    SucceededJobFactory,
)
from tests.helpers import poll_until

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])

WEEK = RetentionSettings(history=7 * 86400, finished_jobs=7 * 86400, interval=None, batch_size=2)


def age(job_id: int, days: int) -> None:
    """Move a job's history and outcome ``days`` back."""
    shift = f"interval '{int(days)} days'"
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE workhorse_job_event SET at = at - {shift} WHERE job_id = %s", [job_id]
        )
        cursor.execute(
            f"UPDATE workhorse_attempt_history SET started_at = started_at - {shift},"
            f" finished_at = finished_at - {shift} WHERE job_id = %s",
            [job_id],
        )
        cursor.execute(
            f"UPDATE workhorse_job_outcome SET finished_at = finished_at - {shift}"
            " WHERE job_id = %s",
            [job_id],
        )


def partitions() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
            " JOIN pg_class p ON p.oid = i.inhparent"
            " WHERE p.relname IN ('workhorse_job_event', 'workhorse_attempt_history')"
            " ORDER BY 1"
        )
        return [row[0] for row in cursor.fetchall()]


def old_partitions(days_ago: int, days: int) -> list[str]:
    """Create ``days`` day partitions from ``days_ago`` days back; their names.

    As the tables' owner, with DDL: workhorse_ensure_partitions_v1 makes
    only the days from yesterday on (docs/security.md)."""
    before = partitions()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.parent, p.parent || '_p' || to_char(d, 'YYYYMMDD'),"
            "       d::timestamp AT TIME ZONE 'UTC', (d + 1)::timestamp AT TIME ZONE 'UTC'"
            " FROM generate_series(0, %s - 1) AS g(i)"
            " CROSS JOIN LATERAL (SELECT (now() AT TIME ZONE 'UTC')::date - %s + g.i AS d) day"
            " CROSS JOIN unnest(ARRAY['workhorse_job_event', 'workhorse_attempt_history'])"
            " AS p(parent)",
            [days, days_ago],
        )
        for parent, child, start, end in cursor.fetchall():
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {child} PARTITION OF {parent}"
                " FOR VALUES FROM (%s) TO (%s)",
                [start, end],
            )
    return [p for p in partitions() if p not in before]


@pytest.fixture
def history(db_rows):
    """An old finished job with its history in partitions 30 days back, a recent
    finished job, and live jobs (one of them created long ago)."""
    made = old_partitions(30, 2)
    old = SucceededJobFactory(queue="retention")
    age(old.id, 30)
    recent = SucceededJobFactory(queue="retention")
    live = ReadyJobFactory(queue="retention")
    age(live.id, 30)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE workhorse_job SET created_at = created_at - interval '30 days' WHERE id = %s",
            [live.id],
        )
    waiting = ScheduledJobFactory(queue="retention", delay=90 * 86400)
    yield {
        "old": old.id,
        "recent": recent.id,
        "live": live.id,
        "waiting": waiting.id,
        "old_partitions": made,
    }
    with connection.cursor() as cursor:
        for name in made:
            cursor.execute(f"DROP TABLE IF EXISTS {name}")


def test_a_dry_run_reports_what_would_go_and_changes_nothing(history, db_rows):
    counts, parts = db_rows.counts(), partitions()

    report = prune(connection.cursor(), dry_run=True, settings=WEEK)

    assert sorted(report.dropped_partitions) == sorted(history["old_partitions"])
    assert report.deleted_jobs == 1
    assert (db_rows.counts(), partitions()) == (counts, parts)


def test_a_run_drops_old_partitions_and_old_finished_jobs_only(history, db_rows):
    recent_parts = [p for p in partitions() if p not in history["old_partitions"]]
    keep = {k: db_rows.of_job(history[k]) for k in ("recent", "waiting")}
    live = db_rows.of_job(history["live"])

    report = prune(connection.cursor(), settings=WEEK)

    assert sorted(report.dropped_partitions) == sorted(history["old_partitions"])
    assert partitions() == recent_parts
    assert report.deleted_jobs == 1
    gone = db_rows.of_job(history["old"])
    assert (gone["job"], gone["outcome"], gone["query"]) == ([], [], [])
    assert {k: db_rows.of_job(history[k]) for k in keep} == keep
    after = db_rows.of_job(history["live"])
    assert (after["job"], after["runtime"], after["query"]) == (
        live["job"],
        live["runtime"],
        live["query"],
    )


def test_finished_jobs_are_deleted_in_bounded_batches(db_rows):
    ids = [SucceededJobFactory(queue="batches").id for _ in range(5)]
    for job_id in ids:
        age(job_id, 10)

    report = prune(connection.cursor(), settings=WEEK)

    assert report.deleted_jobs == 5
    assert report.steps >= 3  # batches of 2
    assert all(db_rows.of_job(i)["job"] == [] for i in ids)


def test_rows_in_the_default_partitions_past_the_window_are_deleted(db_rows):
    job = SucceededJobFactory(queue="strays")
    with connection.cursor() as cursor:
        # No partition exists 40 days back: these land in the default partitions.
        cursor.execute(
            "INSERT INTO workhorse_job_event (job_id, at, kind)"
            " SELECT %s, now() - interval '40 days', 'enqueued' FROM generate_series(1, 3)",
            [job.id],
        )
        cursor.execute("SELECT count(*) FROM workhorse_job_event_default")
        assert cursor.fetchone()[0] == 3

        report = prune(cursor, settings=WEEK)

        cursor.execute("SELECT count(*) FROM workhorse_job_event_default")
        assert cursor.fetchone()[0] == 0
    assert report.deleted_history_rows == 3
    assert [e["kind"] for e in db_rows.of_job(job.id)["events"]] == [
        "enqueued",
        "claimed",
        "succeeded",
    ]


def test_a_second_pruner_finds_the_first_busy_and_does_nothing(pg_connect, db_rows):
    job = SucceededJobFactory(queue="busy")
    age(job.id, 10)
    holder = pg_connect()
    with holder.transaction():
        holder.execute("SELECT pg_advisory_xact_lock(hashtext('workhorse_prune'))")
        report = prune(connection.cursor(), settings=WEEK)
        assert report.busy and not report.did_anything
        with pytest.raises(CommandError, match="another prune is running"):
            call_command("workhorse_prune", stdout=StringIO())
        assert db_rows.of_job(job.id)["job"] != []
    assert prune(connection.cursor(), settings=WEEK).deleted_jobs == 1


def test_two_pruners_at_once_delete_each_job_once_without_errors(pg_connect, db_rows):
    ids = [SucceededJobFactory(queue="race").id for _ in range(8)]
    for job_id in ids:
        age(job_id, 10)
    reports, errors = [], []

    def run() -> None:
        try:
            with pg_connect().cursor() as cursor:
                while True:  # a busy turn is skipped; try again until all is gone
                    report = prune(cursor, settings=WEEK)
                    reports.append(report)
                    if not report.busy:
                        return
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)

    assert errors == []
    assert sum(r.deleted_jobs for r in reports) == 8
    assert all(db_rows.of_job(i)["job"] == [] for i in ids)


def test_the_command_prints_what_a_dry_run_would_do(history, db_rows):
    counts = db_rows.counts()
    out = StringIO()

    call_command("workhorse_prune", "--dry-run", stdout=out)

    text = out.getvalue()
    assert all(f"would drop partition {p}" in text for p in history["old_partitions"])
    assert "would delete 1 finished job(s)" in text
    assert db_rows.counts() == counts


def test_the_command_says_a_window_of_none_keeps_forever(db_rows, settings):
    """It printed "history before 0001-01-02 00:00:00 UTC", the stand-in cut-off."""
    settings.WORKHORSE = {"RETENTION": {"HISTORY": None, "FINISHED_JOBS": None}}
    out = StringIO()

    call_command("workhorse_prune", "--dry-run", stdout=out)

    first = out.getvalue().splitlines()[0]
    assert first == "history kept forever, finished jobs kept forever"


def test_workers_prune_periodically(db_rows, settings):
    job = SucceededJobFactory(queue="periodic")
    age(job.id, 10)
    sweeper = RetentionSweeper(
        alias="default",
        settings=RetentionSettings(
            history=7 * 86400, finished_jobs=7 * 86400, interval=0.2, batch_size=100
        ),
    )
    sweeper.start()
    try:
        poll_until(
            lambda: db_rows.of_job(job.id)["job"] == [],
            timeout=15,
            interval=0.1,
            what="the sweeper to delete the old finished job",
        )
    finally:
        sweeper.stop()
        sweeper.join(5)


def test_a_partition_a_long_reader_holds_is_left_for_later(history, pg_connect, db_rows):
    """A drop waits for every reader of its table and, while it waits, every
    insert of the fleet waits behind it: a drop that cannot lock within a
    second is left for a later run, and the rest of retention goes on."""
    reader = pg_connect()
    with reader.transaction():
        reader.execute("SELECT count(*) FROM workhorse_job_event")

        report = prune(connection.cursor(), settings=WEEK)

        event_parts = [p for p in history["old_partitions"] if "job_event" in p]
        assert report.deferred_partitions == event_parts[:1]
        assert set(event_parts) <= set(partitions())
        assert report.deleted_jobs == 1
        assert any("is in use" in line for line in report.lines())

    again = prune(connection.cursor(), settings=WEEK)
    assert sorted(again.dropped_partitions) == event_parts
    assert again.deferred_partitions == []


def test_a_step_that_drops_partitions_commits_before_it_deletes(history):
    """The exclusive lock of a drop is held for the drops alone."""
    report = prune(connection.cursor(), settings=WEEK)

    assert report.dropped_partitions and report.deleted_jobs == 1
    assert report.steps >= 2


def test_a_worker_behind_on_retention_takes_its_next_turn_at_once(db_rows, monkeypatch, caplog):
    from django_workhorse.worker import retention_turn as worker_retention

    monkeypatch.setattr(worker_retention, "MAX_STEPS_PER_TURN", 2)
    ids = [SucceededJobFactory(queue="behind").id for _ in range(5)]
    for job_id in ids:
        age(job_id, 10)

    class StartsAtOnce(RetentionSweeper):
        def first_wait(self) -> float:
            return 0.0

    # An hour between turns: only the catch-up can delete all five in time.
    sweeper = StartsAtOnce(
        alias="default",
        settings=RetentionSettings(
            history=7 * 86400, finished_jobs=7 * 86400, interval=3600, batch_size=1
        ),
    )
    sweeper.start()
    try:
        poll_until(
            lambda: all(db_rows.of_job(i)["job"] == [] for i in ids),
            timeout=30,
            interval=0.1,
            what="the sweeper to catch up with all five old jobs",
        )
    finally:
        sweeper.stop()
        sweeper.join(5)
    assert "left more past the window" in caplog.text


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("value", "key"),
    [
        ({"HISTORY": -1}, "RETENTION['HISTORY']"),
        ({"FINISHED_JOBS": "7d"}, "RETENTION['FINISHED_JOBS']"),
        ({"BATCH_SIZE": 0}, "RETENTION['BATCH_SIZE']"),
        ({"BATCH_SIZE": 1_000_001}, "RETENTION['BATCH_SIZE']"),
        ({"BATCH_SIZE": True}, "RETENTION['BATCH_SIZE']"),
        ({"INTERVAL": 0.009}, "RETENTION['INTERVAL']"),
        ({"HISTORY": 10**10}, "RETENTION['HISTORY']"),
        ({"FINISHED_JOBS": timedelta(seconds=10**10)}, "RETENTION['FINISHED_JOBS']"),
        ({"KEEP": 1}, "RETENTION['KEEP']"),
        ([], "RETENTION"),
    ],
)
def test_bad_retention_settings_are_reported_with_their_key(value, key):
    assert [k for k, _ in retention_problems(value)] == [key]


def test_none_keeps_forever_and_timedelta_values_work():
    assert retention_problems({"HISTORY": None, "FINISHED_JOBS": timedelta(days=30)}) == []


def test_the_bounds_themselves_are_accepted():
    bounds = {"HISTORY": 10**10 - 1, "INTERVAL": 0.01, "BATCH_SIZE": 1_000_000}
    assert retention_problems(bounds) == []
    assert retention_problems({"BATCH_SIZE": 1}) == []


def test_the_prune_command_refuses_to_start_on_a_bad_value(db_rows, settings):
    settings.WORKHORSE = {"RETENTION": {"BATCH_SIZE": 0}}

    with pytest.raises(CommandError, match=r"WORKHORSE\['RETENTION'\]\['BATCH_SIZE'\]"):
        call_command("workhorse_prune", "--dry-run", stdout=StringIO())


def dependency_rows(*job_ids: int) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT * FROM workhorse_job_dependency"
            " WHERE job_id = ANY(%s) OR prerequisite_id = ANY(%s)",
            [list(job_ids), list(job_ids)],
        )
        return cursor.fetchall()


def test_a_retired_job_takes_its_checkpoints_and_dependency_rows_with_it(db_rows):
    from django_workhorse import Admin
    from django_workhorse.db import store

    prerequisite = ActiveJobFactory(queue="retire-rows")
    dependent = ReadyJobFactory(queue="retire-rows", depends_on=[prerequisite.id])
    with connection.cursor() as cursor:
        store.write_checkpoint(
            cursor, prerequisite.id, prerequisite.worker, prerequisite.fence, "charge", "1"
        )
        store.succeed_many(
            cursor, prerequisite.worker, [prerequisite.id], [prerequisite.fence], ["null"]
        )
    assert Admin().cancel(dependent.id).status == "changed"
    assert db_rows.checkpoints(prerequisite.id) and dependency_rows(dependent.id)
    for job_id in (prerequisite.id, dependent.id):
        age(job_id, 10)

    report = prune(connection.cursor(), settings=WEEK)

    assert report.deleted_jobs == 2
    assert db_rows.checkpoints(prerequisite.id) == []
    assert dependency_rows(prerequisite.id, dependent.id) == []
    assert [db_rows.of_job(j)["job"] for j in (prerequisite.id, dependent.id)] == [[], []]
