"""A schedule's time that Python cannot load (docs/schedules.md).

``workhorse_schedule_fire_v1`` refuses a ``next`` outside the years 1 to 9999
(UTC), the range of a job's run_at, with SQLSTATE 22023. A row that holds
one anyway (an operator's hand-written UPDATE: ``'-infinity'`` to make a
schedule due now) is skipped and reported by the sweep, once, while the
other schedules go on; ``Admin().list_schedules()``, ``workhorse_status``
and the queues page show it flagged instead of failing."""

from __future__ import annotations

import io
import json
import logging
from datetime import UTC, datetime

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection

from django_workhorse import Admin
from django_workhorse.core.schedules import Schedule, sync
from django_workhorse.worker.scheduler import sweep

RECORD = "jobtests.jobs.record"
OUT_OF_RANGE = ["-infinity", "infinity", "10000-01-01 00:00:00+00", "0001-12-31 23:59:59+00 BC"]


def schedule(name: str, cron: str = "* * * * * *") -> Schedule:
    return Schedule(name, RECORD, cron, "UTC", {"label": name})


def schedule_jobs(cursor, name: str) -> int:
    cursor.execute(
        "SELECT count(*) FROM workhorse_job WHERE idempotency_key LIKE %s", [f"schedule:{name}:%"]
    )
    return cursor.fetchone()[0]


def set_next_run_at(cursor, name: str, value: str) -> None:
    cursor.execute(
        "UPDATE workhorse_schedule SET next_run_at = %s::timestamptz WHERE name = %s",
        [value, name],
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("value", OUT_OF_RANGE)
def test_fire_refuses_a_next_python_cannot_load_and_leaves_the_schedule_as_it_was(
    pg_connect, value
):
    conn = pg_connect()
    with conn.cursor() as cursor:
        sync(cursor, [schedule("tick")])
        cursor.execute("SELECT next_run_at FROM workhorse_schedule WHERE name = 'tick'")
        (before,) = cursor.fetchone()

        with pytest.raises(psycopg.Error) as refused:
            cursor.execute(
                "SELECT * FROM workhorse_schedule_fire_v1('tick', NULL, '{}', %s::timestamptz)",
                [value],
            )

        assert refused.value.sqlstate == "22023"
        assert "is outside the years 1 to 9999 (UTC)" in str(refused.value)
        cursor.execute("SELECT next_run_at FROM workhorse_schedule WHERE name = 'tick'")
        assert cursor.fetchone() == (before,)


@pytest.mark.django_db(transaction=True)
def test_fire_refuses_a_slot_python_cannot_load_and_enqueues_nothing(pg_connect):
    conn = pg_connect()
    with conn.cursor() as cursor:
        sync(cursor, [schedule("tick")])

        with pytest.raises(psycopg.Error) as refused:
            cursor.execute(
                "SELECT * FROM workhorse_schedule_fire_v1('tick', NULL,"
                " ARRAY[now(), 'infinity']::timestamptz[], now() + interval '1 second')"
            )

        assert refused.value.sqlstate == "22023"
        assert schedule_jobs(cursor, "tick") == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("value", ["-infinity", "infinity"])
def test_a_sweep_reports_an_unreadable_schedule_once_and_fires_the_others(
    pg_connect, caplog, value
):
    conn = pg_connect()
    with conn.cursor() as cursor:
        sync(cursor, [schedule("a-broken"), schedule("b-fine")])
        set_next_run_at(cursor, "a-broken", value)
        set_next_run_at(cursor, "b-fine", "2000-01-01 00:00:00+00")
        reported: dict[str, str] = {}

        with caplog.at_level(logging.ERROR, logger="django_workhorse.worker"):
            assert sweep(cursor, reported) == 1
            sweep(cursor, reported)  # the same row again: not reported again

        assert schedule_jobs(cursor, "b-fine") >= 1
        assert schedule_jobs(cursor, "a-broken") == 0
    [record] = [r for r in caplog.records if r.levelname == "ERROR"]
    message = record.getMessage()
    assert "schedule 'a-broken' is skipped" in message
    assert f"next_run_at {value} is outside the years 1 to 9999 (UTC)" in message
    assert "set it to NULL" in message


@pytest.mark.django_db(transaction=True)
def test_a_schedule_fixed_by_setting_next_run_at_to_null_is_planned_again(pg_connect):
    conn = pg_connect()
    with conn.cursor() as cursor:
        sync(cursor, [schedule("tick")])
        set_next_run_at(cursor, "tick", "-infinity")
        reported: dict[str, str] = {}
        sweep(cursor, reported)
        assert list(reported) == ["tick"]

        cursor.execute("UPDATE workhorse_schedule SET next_run_at = NULL WHERE name = 'tick'")
        sweep(cursor, reported)

        assert reported == {}
        cursor.execute("SELECT next_run_at > now() FROM workhorse_schedule WHERE name = 'tick'")
        assert cursor.fetchone() == (True,)


def unreadable_beside_a_fine_one() -> None:
    with connection.cursor() as cursor:
        sync(cursor, [schedule("a-broken", "0 3 * * *"), schedule("b-fine", "0 3 * * *")])
        sweep(cursor)  # plans both
        set_next_run_at(cursor, "a-broken", "-infinity")
        cursor.execute(
            "UPDATE workhorse_schedule SET last_slot_at = 'infinity' WHERE name = 'a-broken'"
        )


@pytest.mark.django_db
def test_list_schedules_flags_the_unreadable_row_and_lists_the_others():
    unreadable_beside_a_fine_one()

    broken, fine = Admin().list_schedules()

    assert (broken.name, broken.next_run_at, broken.last_slot_at) == ("a-broken", None, None)
    assert broken.unreadable.startswith("next_run_at -infinity is outside the years 1 to 9999")
    assert "last_slot_at infinity is outside" in broken.unreadable
    assert (fine.name, fine.unreadable) == ("b-fine", None)
    assert fine.next_run_at > datetime.now(UTC)


@pytest.mark.django_db
def test_workhorse_status_shows_the_unreadable_row_flagged_and_the_others():
    unreadable_beside_a_fine_one()
    text, data = io.StringIO(), io.StringIO()

    call_command("workhorse_status", stdout=text)
    call_command("workhorse_status", "--json", stdout=data)

    lines = text.getvalue().splitlines()
    assert any(line.startswith("a-broken") and "unreadable (below)" in line for line in lines)
    assert any(line.startswith("b-fine") and "03:00:00" in line for line in lines)
    assert any(
        line.startswith("schedule a-broken cannot be read: next_run_at -infinity") for line in lines
    )
    broken, fine = json.loads(data.getvalue())["schedules"]
    assert broken["next_run_at"] is None and "-infinity" in broken["unreadable"]
    assert fine["unreadable"] is None and fine["next_run_at"] is not None


@pytest.mark.django_db(transaction=True)
def test_a_sweep_skips_a_schedule_whose_zone_was_set_to_the_hosts_own_by_hand(pg_connect, caplog):
    conn = pg_connect()
    with conn.cursor() as cursor:
        sync(cursor, [schedule("a-local"), schedule("b-fine")])
        cursor.execute(
            "UPDATE workhorse_schedule SET timezone = 'localtime' WHERE name = 'a-local'"
        )
        set_next_run_at(cursor, "a-local", "2000-01-01 00:00:00+00")
        set_next_run_at(cursor, "b-fine", "2000-01-01 00:00:00+00")
        reported: dict[str, str] = {}

        with caplog.at_level(logging.ERROR, logger="django_workhorse.worker"):
            assert sweep(cursor, reported) == 1
            sweep(cursor, reported)

        assert schedule_jobs(cursor, "a-local") == 0
    [record] = [r for r in caplog.records if r.levelname == "ERROR"]
    assert "schedule 'a-local' is skipped, it cannot be planned: timezone 'localtime'" in (
        record.getMessage()
    )


@pytest.mark.django_db(transaction=True)
def test_a_sweep_reports_a_catch_up_all_schedule_due_from_the_year_1_where_its_zone_has_no_calendar(
    pg_connect, caplog
):
    conn = pg_connect()
    with conn.cursor() as cursor:
        sync(
            cursor,
            [
                Schedule("a-west", RECORD, "0 3 * * *", "America/New_York", {}, "all"),
                schedule("b-fine"),
            ],
        )
        # Inside the years 1 to 9999 in UTC, so the function takes it; in
        # New York it is still the year 0.
        cursor.execute(
            "SELECT * FROM workhorse_schedule_fire_v1('a-west', NULL, '{}',"
            " '0001-01-01 00:00:00+00')"
        )
        set_next_run_at(cursor, "b-fine", "2000-01-01 00:00:00+00")
        reported: dict[str, str] = {}

        with caplog.at_level(logging.ERROR, logger="django_workhorse.worker"):
            assert sweep(cursor, reported) == 1
            sweep(cursor, reported)

        assert schedule_jobs(cursor, "a-west") == 0
    [record] = [r for r in caplog.records if r.levelname == "ERROR"]
    message = record.getMessage()
    assert "schedule 'a-west' is skipped, it cannot be planned: its next_run_at 0001-01-01" in (
        message
    )
    assert "before the year 1 in its time zone America/New_York; set it to NULL" in message


@pytest.mark.django_db(transaction=True)
def test_a_sweep_reports_a_schedule_whose_job_cannot_be_enqueued_once_and_fires_the_others(
    pg_connect, caplog
):
    conn = pg_connect()
    with conn.cursor() as cursor:
        sync(cursor, [schedule("a-refused"), schedule("b-fine")])
        # Options written by hand that the enqueue refuses.
        cursor.execute(
            "UPDATE workhorse_schedule SET job_options = job_options || '{\"max_attempts\": 0}'"
            " WHERE name = 'a-refused'"
        )
        reported: dict[str, str] = {}
        with caplog.at_level(logging.ERROR, logger="django_workhorse.worker"):
            for _ in range(3):
                cursor.execute("UPDATE workhorse_schedule SET next_run_at = now()")
                sweep(cursor, reported)

        assert schedule_jobs(cursor, "a-refused") == 0
        assert schedule_jobs(cursor, "b-fine") >= 1
    [record] = [r for r in caplog.records if r.levelname == "ERROR"]
    assert "schedule 'a-refused' could not enqueue its job (" in record.getMessage()
    assert "max_attempts" in record.getMessage()
