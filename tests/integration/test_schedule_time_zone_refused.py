"""``workhorse_schedule_sync_v1`` stores only zone names of the IANA database
(docs/sql.md): a SQL caller cannot store the host's own zone, which two
hosts would read as two zones, nor another file of the zoneinfo directory."""

from __future__ import annotations

import json

import psycopg
import pytest
from django.db import connection

pytestmark = pytest.mark.django_db(transaction=True)


def sync_one(cursor, timezone: str) -> None:
    row = {"name": "nightly", "job_name": "jobtests.jobs.record", "cron": "0 3 * * *"}
    cursor.execute(
        "SELECT * FROM workhorse_schedule_sync_v1(%s::jsonb)",
        [json.dumps([{**row, "timezone": timezone}])],
    )


@pytest.mark.parametrize(
    "zone",
    ["localtime", "posixrules", "Factory", "posix/Europe/Paris", "right/UTC", "/etc/localtime"],
)
def test_sync_refuses_a_time_zone_that_is_no_iana_zone_and_stores_nothing(pg_connect, zone):
    conn = pg_connect()
    with conn.cursor() as cursor, pytest.raises(psycopg.Error) as refused:
        sync_one(cursor, zone)

    assert refused.value.sqlstate == "22023"
    assert f'schedule "nightly" has timezone "{zone}"' in str(refused.value)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM workhorse_schedule")
        assert cursor.fetchone() == (0,)


def test_sync_stores_an_iana_zone_and_its_links(pg_connect):
    conn = pg_connect()
    with conn.cursor() as cursor:
        for zone in ("Europe/Paris", "UTC", "Etc/GMT+5", "America/Port-au-Prince", "US/Eastern"):
            sync_one(cursor, zone)
            cursor.execute("SELECT timezone FROM workhorse_schedule")
            assert cursor.fetchone() == (zone,)
