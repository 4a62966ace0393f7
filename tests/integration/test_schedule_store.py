"""Schedules in the database: sync from code and settings, one job per slot,
catch-up, pause and resume."""

from __future__ import annotations

import itertools
import json
import threading
from datetime import timedelta

import pytest
from demo.jobs import add
from django.core.exceptions import ImproperlyConfigured

import django_workhorse as workhorse
from django_workhorse import Admin, UnknownScheduleError
from django_workhorse.core.schedules import Schedule, declared, sync
from django_workhorse.db import store
from django_workhorse.worker.scheduler import sweep

NOOP = "jobtests.jobs.record"


def every_second(name: str = "tick", **fields) -> Schedule:
    return Schedule(name, NOOP, "* * * * * *", "UTC", {"label": name}, **fields)


def schedule_row(cursor, name: str) -> dict:
    cursor.execute("SELECT * FROM workhorse_schedule WHERE name = %s", [name])
    names = [c[0] for c in cursor.description]
    row = cursor.fetchone()
    if row is None:
        return None
    found = dict(zip(names, row, strict=True))
    found["job_options"] = json.loads(found["job_options"])
    return found


def schedule_jobs(cursor, name: str) -> list[tuple]:
    cursor.execute(
        "SELECT j.id, j.name, j.queue, j.payload::text, rt.run_at FROM workhorse_job j"
        " LEFT JOIN workhorse_job_runtime rt ON rt.job_id = j.id"
        " WHERE j.idempotency_key LIKE %s ORDER BY rt.run_at",
        [f"schedule:{name}:%"],
    )
    return cursor.fetchall()


def make_due(cursor, name: str, seconds_ago: float) -> None:
    """Plan the schedule's slot in the past, as if no worker swept since."""
    cursor.execute(
        "UPDATE workhorse_schedule SET next_run_at = date_trunc('second', now())"
        " - make_interval(secs => %s) WHERE name = %s",
        [seconds_ago, name],
    )


@pytest.mark.django_db
def test_sync_adds_updates_and_removes_schedules(cursor):
    assert sync(cursor, [every_second("a"), every_second("b")]) == {"a": "added", "b": "added"}

    changed = Schedule("a", NOOP, "*/2 * * * * *", "UTC", {"label": "a"})
    assert sync(cursor, [changed]) == {"a": "updated", "b": "removed"}
    assert sync(cursor, [changed]) == {"a": "unchanged"}
    row = schedule_row(cursor, "a")
    assert (row["cron"], row["job_options"]["queue"]) == ("*/2 * * * * *", "jobtests.record")
    assert schedule_row(cursor, "b") is None


@pytest.mark.django_db
def test_a_cron_whose_spacing_alone_changed_is_unchanged_and_keeps_its_planned_slot(cursor):
    sync(cursor, [Schedule("a", NOOP, " */2  * * * * * ", "UTC", {"label": "a"})])
    sweep(cursor)
    planned = schedule_row(cursor, "a")["next_run_at"]

    assert sync(cursor, [Schedule("a", NOOP, "*/2 * * * * *", "UTC", {"label": "a"})]) == {
        "a": "unchanged"
    }
    row = schedule_row(cursor, "a")
    assert (row["cron"], row["next_run_at"]) == ("*/2 * * * * *", planned)


@pytest.mark.django_db
def test_a_changed_cron_forgets_the_planned_slot_but_keeps_the_pause(cursor):
    sync(cursor, [every_second("a")])
    sweep(cursor)
    assert schedule_row(cursor, "a")["next_run_at"] is not None
    store.set_schedule_paused(cursor, "a", True)

    sync(cursor, [Schedule("a", NOOP, "*/3 * * * * *", "UTC", {"label": "a"})])

    row = schedule_row(cursor, "a")
    assert (row["next_run_at"], row["paused"]) == (None, True)


@pytest.mark.django_db(transaction=True)
def test_many_workers_syncing_at_once_leave_exactly_the_declared_schedules(pg_connect):
    wanted = [every_second(f"s{i}") for i in range(20)]
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def worker_start() -> None:
        conn = pg_connect()
        try:
            start.wait()
            with conn.transaction(), conn.cursor() as cursor:
                sync(cursor, wanted)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker_start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert errors == []
    with pg_connect().cursor() as cursor:
        cursor.execute("SELECT name FROM workhorse_schedule ORDER BY name")
        assert [r[0] for r in cursor.fetchall()] == sorted(s.name for s in wanted)


@pytest.mark.django_db
def test_the_first_sweep_plans_a_new_schedule_without_enqueuing(cursor):
    sync(cursor, [every_second()])

    assert sweep(cursor) == 0

    assert schedule_row(cursor, "tick")["next_run_at"] is not None
    assert schedule_jobs(cursor, "tick") == []


@pytest.mark.django_db
def test_a_due_slot_is_enqueued_as_the_scheduled_job_with_its_payload(cursor):
    sync(cursor, [every_second()])
    make_due(cursor, "tick", 0)
    due_at = schedule_row(cursor, "tick")["next_run_at"]

    assert sweep(cursor) == 1

    [(job_id, name, queue, payload, run_at)] = schedule_jobs(cursor, "tick")
    assert (name, queue, payload, run_at) == (NOOP, "jobtests.record", '{"label": "tick"}', due_at)
    row = schedule_row(cursor, "tick")
    assert row["next_run_at"] > due_at
    assert (row["last_slot_at"], row["last_job_id"]) == (due_at, job_id)


@pytest.mark.django_db
def test_two_sweeps_of_one_due_slot_make_one_job(cursor):
    sync(cursor, [every_second()])
    make_due(cursor, "tick", 0)
    [due] = store.due_schedules(cursor)
    slot, upcoming = due.next_run_at, due.next_run_at + timedelta(seconds=1)

    first = store.fire_schedule(cursor, "tick", due.next_run_at, [slot], upcoming)
    second = store.fire_schedule(cursor, "tick", due.next_run_at, [slot], upcoming)

    assert [inserted for _, _, inserted in first] == [True]
    assert second == []
    assert len(schedule_jobs(cursor, "tick")) == 1


@pytest.mark.django_db
def test_a_slot_offered_again_is_refused_by_its_idempotency_key(cursor):
    sync(cursor, [every_second()])
    make_due(cursor, "tick", 0)
    [due] = store.due_schedules(cursor)
    slot = due.next_run_at
    store.fire_schedule(cursor, "tick", slot, [slot], slot + timedelta(seconds=1))
    make_due(cursor, "tick", 0)  # someone plans the same slot again by hand
    cursor.execute("UPDATE workhorse_schedule SET next_run_at = %s", [slot])

    again = store.fire_schedule(cursor, "tick", slot, [slot], slot + timedelta(seconds=1))

    assert [inserted for _, _, inserted in again] == [False]
    assert len(schedule_jobs(cursor, "tick")) == 1


@pytest.mark.django_db
def test_slots_missed_while_no_worker_swept_make_one_catch_up_job(cursor):
    sync(cursor, [every_second()])
    make_due(cursor, "tick", 30)

    assert sweep(cursor) == 1
    assert sweep(cursor) == 0  # the schedule is planned after now again

    assert len(schedule_jobs(cursor, "tick")) == 1


@pytest.mark.django_db
def test_catch_up_all_makes_one_job_per_missed_slot(cursor):
    sync(cursor, [every_second(catch_up="all")])
    make_due(cursor, "tick", 30)

    inserted = sweep(cursor)

    run_ats = [row[4] for row in schedule_jobs(cursor, "tick")]
    assert inserted == len(run_ats) >= 31
    assert all(b - a == timedelta(seconds=1) for a, b in itertools.pairwise(run_ats))


@pytest.mark.django_db
def test_a_paused_schedule_is_not_swept_and_resumes_without_catching_up(cursor):
    sync(cursor, [every_second()])
    make_due(cursor, "tick", 10)

    Admin().pause_schedule("tick")
    assert sweep(cursor) == 0
    assert schedule_row(cursor, "tick")["paused"] is True

    Admin().resume_schedule("tick")
    assert sweep(cursor) == 0  # plans the first slot after now
    assert schedule_jobs(cursor, "tick") == []
    assert schedule_row(cursor, "tick")["paused"] is False


@pytest.mark.django_db
def test_pausing_an_unknown_schedule_names_it():
    with pytest.raises(UnknownScheduleError, match="no schedule named 'nope'"):
        Admin().pause_schedule("nope")


@pytest.mark.django_db
def test_resuming_an_unknown_schedule_names_it():
    with pytest.raises(UnknownScheduleError, match="no schedule named 'nope'"):
        Admin().resume_schedule("nope")


@pytest.mark.django_db
def test_a_pause_survives_a_sync_of_the_same_schedules(cursor):
    sync(cursor, [every_second()])
    Admin().pause_schedule("tick")

    assert sync(cursor, [every_second()]) == {"tick": "unchanged"}

    assert schedule_row(cursor, "tick")["paused"] is True
    assert [s.paused for s in Admin().list_schedules()] == [True]


@pytest.mark.django_db
def test_a_schedule_no_longer_declared_is_removed_pause_and_all(cursor):
    sync(cursor, [every_second(), every_second("other")])
    Admin().pause_schedule("tick")

    sync(cursor, [every_second("other")])
    assert schedule_row(cursor, "tick") is None
    sync(cursor, [every_second(), every_second("other")])

    assert schedule_row(cursor, "tick")["paused"] is False


def test_job_schedule_declares_a_schedule_named_after_the_job():
    @workhorse.job(name="tests.schedules.nightly", queue="jobtests.record", schedule="0 3 * * *")
    def nightly() -> None:
        pass

    found = {s.name: s for s in declared("default", {})}
    assert found["tests.schedules.nightly"] == Schedule(
        "tests.schedules.nightly", "tests.schedules.nightly", "0 3 * * *", "UTC"
    )


def test_a_bad_job_schedule_is_refused_when_the_job_is_defined():
    with pytest.raises(workhorse.InvalidJobOptionError, match="schedule: cron 'soon' is not"):

        @workhorse.job(name="tests.schedules.bad", schedule="soon")
        def bad() -> None:
            pass


def test_a_job_with_required_arguments_cannot_have_a_job_schedule():
    with pytest.raises(workhorse.InvalidPayloadError):

        @workhorse.job(name="tests.schedules.needs_args", schedule="* * * * *")
        def needs_args(x: int) -> None:
            pass


def test_a_settings_schedule_of_an_unknown_job_stops_the_worker_naming_it():
    with pytest.raises(ImproperlyConfigured, match=r"SCHEDULES'\]\['n'\]: no job named 'nope'"):
        declared("default", {"n": {"job": "nope", "cron": "* * * * *"}})


def test_a_settings_payload_that_does_not_fit_the_job_is_refused():
    with pytest.raises(ImproperlyConfigured, match="payload does not fit"):
        declared("default", {"n": {"job": add.name, "cron": "* * * * *", "payload": {"z": 1}}})


@pytest.mark.django_db(transaction=True)
def test_a_schedule_that_cannot_enqueue_is_logged_and_the_others_still_fire(pg_connect, caplog):
    # On a worker's autocommit connection, as the sweeper runs.
    conn = pg_connect()
    with conn.cursor() as cursor:
        sync(cursor, [every_second("a-broken"), every_second("b-fine")])
        # A row edited by hand: priority 500 breaks the job table's CHECK.
        cursor.execute(
            "UPDATE workhorse_schedule SET job_options = job_options || '{\"priority\": 500}'"
            " WHERE name = 'a-broken'"
        )
        make_due(cursor, "a-broken", 2)
        make_due(cursor, "b-fine", 1)  # swept after a-broken

        with caplog.at_level("ERROR", logger="django_workhorse.worker"):
            assert sweep(cursor) == 1

        assert len(schedule_jobs(cursor, "b-fine")) == 1
        assert schedule_jobs(cursor, "a-broken") == []
    [record] = [r for r in caplog.records if r.levelname == "ERROR"]
    assert "'a-broken'" in record.getMessage()
    assert "workhorse_schedule" in record.getMessage()
