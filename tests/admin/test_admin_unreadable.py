"""A job whose stored JSON Python cannot decode still has its page: a worker
in another language may record an error with a number of more digits than
Python reads, or nested deeper than its decoder goes (docs/sql.md), and the
page shows such a value as its JSON text (docs/admin.md: no page answers a
server error)."""

from __future__ import annotations

import pytest
from django.db import connection

from django_workhorse.core.schedules import Schedule, sync
from django_workhorse.db import store
from django_workhorse.worker.scheduler import sweep
from tests.factories import ActiveJobFactory

pytestmark = pytest.mark.django_db

JOBS = "/admin/django_workhorse/job/"

HUGE = "1" + "0" * 5000  # beyond sys.get_int_max_str_digits()


def failed_with(error_json: str) -> int:
    job = ActiveJobFactory(max_attempts=1)
    with connection.cursor() as cursor:
        store.fail_many(
            cursor, job.worker, [job.id], [job.fence], [error_json], ["failed"], [True], [0.0]
        )
    return job.id


def test_a_job_whose_error_has_a_number_python_cannot_read_has_its_page(operator_client):
    job_id = failed_with('{"type": "Overflow", "message": "too big", "n": ' + HUGE + "}")

    response = operator_client.get(f"{JOBS}{job_id}/")

    assert response.status_code == 200
    body = response.content.decode()
    assert body.count(HUGE[:200]) >= 2  # the error, and the attempt's in the timeline


def test_a_job_whose_error_nests_deeper_than_python_reads_has_its_page(operator_client):
    job_id = failed_with(
        '{"type": "Deep", "message": "m", "x": %s}' % ("[" * 10_000 + "]" * 10_000)
    )

    response = operator_client.get(f"{JOBS}{job_id}/")

    assert response.status_code == 200
    assert "[[[[[[[[" in response.content.decode()


def test_the_queues_page_flags_a_schedule_whose_next_run_python_cannot_read(operator_client):
    # Written by hand (workhorse_schedule_fire_v1 refuses it): '-infinity'
    # is before year 1. The other schedules are shown as usual.
    with connection.cursor() as cursor:
        sync(
            cursor,
            [
                Schedule("a-broken", "jobtests.jobs.record", "0 3 * * *"),
                Schedule("b-fine", "jobtests.jobs.record", "0 3 * * *"),
            ],
        )
        sweep(cursor)  # plans both
        cursor.execute(
            "UPDATE workhorse_schedule SET next_run_at = '-infinity' WHERE name = 'a-broken'"
        )

    page = operator_client.get("/admin/django_workhorse/queue/")

    assert page.status_code == 200
    body = page.content.decode()
    broken = body[body.index('id="wh-schedule-a-broken"') :].split("</tr>")[0]
    assert ">unreadable</span> next_run_at -infinity is outside the years 1 to 9999" in broken
    fine = body[body.index('id="wh-schedule-b-fine"') :].split("</tr>")[0]
    assert "03:00:00" in fine


@pytest.mark.parametrize(
    ("zone", "next_run_at", "shown"),
    [
        ("Europe/Paris", "9999-12-31 23:30:00+00", "9999-12-31 23:30:00 UTC"),
        ("America/New_York", "0001-01-01 00:00:00+00", "1-01-01 00:00:00 UTC"),
    ],
)
def test_the_queues_page_shows_in_utc_a_schedules_time_its_time_zone_cannot_hold(
    operator_client, settings, zone, next_run_at, shown
):
    # workhorse_schedule_fire_v1 takes any time of the years 1 to 9999 in
    # UTC; in the site's zone this one falls in the year 10000 or 0.
    with connection.cursor() as cursor:
        sync(cursor, [Schedule("edge", "jobtests.jobs.record", "0 3 * * *")])
        cursor.execute(
            "SELECT * FROM workhorse_schedule_fire_v1('edge', NULL,"
            " ARRAY[%s]::timestamptz[], %s::timestamptz)",
            [next_run_at, next_run_at],
        )
    settings.TIME_ZONE = zone

    page = operator_client.get("/admin/django_workhorse/queue/")

    assert page.status_code == 200
    row = page.content.decode().split('id="wh-schedule-edge"')[1].split("</tr>")[0]
    assert row.count(shown) == 2  # the next run and the last slot
