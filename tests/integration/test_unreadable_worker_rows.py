"""``workhorse_status`` and ``Admin.live_workers`` with a worker row Python
cannot read, or that holds what no worker writes (a hand-written row): the
row is shown flagged, with what is wrong and the fix, and the others as
usual; no traceback (docs/admin.md, "Workers")."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.db import connection

from django_workhorse import Admin
from tests.factories import seen_worker

pytestmark = pytest.mark.django_db

HAND_WRITTEN = {
    "slots text": "info = jsonb_set(info, '{slots}', '\"many\"')",
    "busy negative, slots 1e400": (
        "info = jsonb_set(jsonb_set(info, '{busy}', '-1'), '{slots}', '1e400')"
    ),
    "busy of 5000 digits": "info = jsonb_set(info, '{busy}', '" + "9" * 5000 + "')",
    "first seen -infinity": "first_seen_at = '-infinity'",
    "last seen +infinity": "last_seen_at = 'infinity'",
    "both in the year 10000": (
        "first_seen_at = '10000-01-01 00:00:00+00', last_seen_at = '10000-01-01 00:00:00+00'"
    ),
}


def write_by_hand(assignment: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE workhorse_worker SET {assignment} WHERE worker_id = 'host-a:1:broken'"
        )


def status(*args: str) -> str:
    out = io.StringIO()
    call_command("workhorse_status", *args, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize("assignment", HAND_WRITTEN.values(), ids=HAND_WRITTEN.keys())
def test_live_workers_flags_the_row_and_reads_the_others(assignment):
    seen_worker("host-a:1:broken")
    seen_worker("host-b:2:fine", busy=1)
    write_by_hand(assignment)

    workers = {w.worker_id: w for w in Admin().live_workers()}

    assert workers["host-a:1:broken"].unreadable
    fine = workers["host-b:2:fine"]
    assert (fine.unreadable, fine.slots, fine.busy, fine.silent) == (None, 2, 1, False)


@pytest.mark.parametrize("assignment", HAND_WRITTEN.values(), ids=HAND_WRITTEN.keys())
def test_workhorse_status_shows_a_worker_row_it_cannot_read(assignment):
    seen_worker("host-a:1:broken")
    seen_worker("host-b:2:fine")
    write_by_hand(assignment)

    text = status()
    data = json.loads(status("--json"))

    assert "worker host-a:1:broken cannot be read: " in text
    assert "host-b:2:fine on " in text
    seen = {w["worker_id"]: w for w in data["workers"]["seen"]}
    assert seen["host-a:1:broken"]["unreadable"]
    assert seen["host-b:2:fine"]["unreadable"] is None


def test_a_slots_value_no_worker_writes_is_named_with_the_fix():
    seen_worker("host-a:1:broken")
    write_by_hand("info = jsonb_set(info, '{slots}', '\"many\"')")

    (worker,) = Admin().live_workers()

    assert worker.slots is None
    assert worker.unreadable == (
        "slots 'many' is not a whole number from 0 to 2,147,483,647; a running worker writes "
        "its row again at its next heartbeat (delete the row of one that is gone)"
    )


def test_a_time_python_cannot_read_is_named_with_the_fix():
    seen_worker("host-a:1:broken")
    write_by_hand("first_seen_at = 'infinity'")

    (worker,) = Admin().live_workers()

    assert worker.first_seen_at is None
    assert worker.unreadable == (
        "first_seen_at infinity is outside the years 1 to 9999 (UTC) that Python reads; "
        "delete the row (DELETE FROM workhorse_worker WHERE worker_id = 'host-a:1:broken'): "
        "a running worker writes its row again at its next heartbeat"
    )
