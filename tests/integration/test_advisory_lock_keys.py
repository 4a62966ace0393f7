"""The functions that wait for their turn take the advisory lock keys
docs/sql.md lists ("Advisory locks"), so that an application with advisory
locks of its own can keep clear of them by that list."""

from __future__ import annotations

import psycopg
import pytest

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


@pytest.mark.parametrize(
    ("key", "call"),
    [
        (
            "hashtext('workhorse_ensure_partitions')",
            "SELECT workhorse_ensure_partitions_v1(current_date, 1)",
        ),
        (
            "hashtext('workhorse_schedule_sync_v1')",
            "SELECT * FROM workhorse_schedule_sync_v1('[]')",
        ),
    ],
)
def test_a_function_waits_while_another_session_holds_its_listed_key(pg_connect, key, call):
    holder, caller = pg_connect(), pg_connect()
    holder.execute(f"SELECT pg_advisory_lock({key})")
    caller.execute("SET lock_timeout = '200ms'")

    with pytest.raises(psycopg.errors.LockNotAvailable):
        caller.execute(call)

    holder.execute(f"SELECT pg_advisory_unlock({key})")
    caller.execute(call)  # and runs once the key is free


def test_ensure_partitions_after_waiting_finds_the_partitions_there(pg_connect):
    first, second = pg_connect(), pg_connect()
    first.execute("SELECT workhorse_ensure_partitions_v1(current_date + 200, 2)")

    call = "SELECT workhorse_ensure_partitions_v1(current_date + 200, 2)"
    (created,) = second.execute(call).fetchone()

    assert created == 0
