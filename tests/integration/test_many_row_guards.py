"""The many-row SQL functions refuse what would be applied wrongly.

A job named twice in one call is refused by the functions that close or
release a run (it would be closed twice: two history rows, two events for one
attempt), and renewed once by the heartbeat (renewing is idempotent). Arrays
that do not line up are refused everywhere: unnest would pad the short one
with NULLs. A failed attempt closes as ``failed`` or ``timed_out``, nothing
else. Every refusal is a DataError naming the function and what to fix, and
writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import DataError, IntegrityError, transaction

from django_workhorse.db import store
from django_workhorse.states import EventKind
from tests.factories import ActiveJobFactory

pytestmark = pytest.mark.django_db

ERROR = json.dumps({"type": "RuntimeError", "message": "boom"})
SQL_DIR = Path(store.__file__).parent.parent / "sql"


def refused(call, match: str) -> None:
    with pytest.raises(DataError, match=match), transaction.atomic():
        call()


def test_fail_many_refuses_a_job_named_twice_and_writes_nothing(cursor, db_rows):
    job = ActiveJobFactory()
    before = db_rows.fingerprint(job.id)
    refused(
        lambda: store.fail_many(
            cursor,
            job.worker,
            [job.id, job.id],
            [job.fence, job.fence],
            [ERROR, ERROR],
            ["failed", "failed"],
            [True, True],
            [0.0, 0.0],
        ),
        f"fail_many_v1: job {job.id} is named more than once",
    )
    assert db_rows.fingerprint(job.id) == before


def test_release_many_refuses_a_job_named_twice_and_writes_nothing(cursor, db_rows):
    job = ActiveJobFactory()
    before = db_rows.fingerprint(job.id)
    refused(
        lambda: store.release_many(cursor, job.worker, [job.id, job.id], [job.fence, job.fence]),
        f"release_many_v1: job {job.id} is named more than once",
    )
    assert db_rows.fingerprint(job.id) == before


def test_succeed_many_refuses_a_job_named_twice_with_a_message(cursor, db_rows):
    job = ActiveJobFactory()
    before = db_rows.fingerprint(job.id)
    refused(
        lambda: store.succeed_many(
            cursor, job.worker, [job.id, job.id], [job.fence, job.fence], ["1", "2"]
        ),
        f"succeed_many_v1: job {job.id} is named more than once",
    )
    assert db_rows.fingerprint(job.id) == before


def test_a_job_named_twice_in_a_heartbeat_is_renewed_once_and_answered_twice(cursor, db_rows):
    job = ActiveJobFactory()
    rows = store.heartbeat_many(cursor, job.worker, [job.id, job.id], [job.fence, job.fence], 60)
    assert rows == [(job.id, True, False), (job.id, True, False)]
    assert db_rows.runtime(job.id)["state"] == "active"


def test_other_jobs_of_the_call_are_not_written_when_one_is_named_twice(cursor, db_rows):
    first, second = ActiveJobFactory(), ActiveJobFactory(worker="shared")
    third = ActiveJobFactory(worker="shared")
    before = [db_rows.fingerprint(j.id) for j in (first, second, third)]
    refused(
        lambda: store.fail_many(
            cursor,
            "shared",
            [second.id, third.id, second.id],
            [second.fence, third.fence, second.fence],
            [ERROR] * 3,
            ["failed"] * 3,
            [True] * 3,
            [0.0] * 3,
        ),
        "named more than once",
    )
    assert [db_rows.fingerprint(j.id) for j in (first, second, third)] == before


MISMATCHED = {
    "workhorse_heartbeat_many_v1": [
        (lambda c: store.heartbeat_many(c, "w", [1, 2], [1], 30), "2 ids, 1 fences"),
    ],
    "workhorse_release_many_v1": [
        (lambda c: store.release_many(c, "w", [1], [1, 2]), "1 ids, 2 fences"),
    ],
    "workhorse_succeed_many_v1": [
        (lambda c: store.succeed_many(c, "w", [1, 2], [1], ["1", "2"]), "2 ids, 1 fences"),
        (lambda c: store.succeed_many(c, "w", [1, 2], [1, 2], ["1"]), "2 fences, 1 results"),
    ],
    "workhorse_fail_many_v1": [
        (
            lambda c: store.fail_many(
                c, "w", [1, 2], [1], [ERROR] * 2, ["failed"] * 2, [True] * 2, [0.0] * 2
            ),
            "2 ids, 1 fences",
        ),
        (
            lambda c: store.fail_many(
                c, "w", [1, 2], [1, 2], [ERROR], ["failed"] * 2, [True] * 2, [0.0] * 2
            ),
            "2 fences, 1 errors",
        ),
        (
            lambda c: store.fail_many(
                c, "w", [1, 2], [1, 2], [ERROR] * 2, ["failed"], [True] * 2, [0.0] * 2
            ),
            "1 kinds",
        ),
        (
            lambda c: store.fail_many(
                c, "w", [1, 2], [1, 2], [ERROR] * 2, ["failed"] * 2, [True], [0.0] * 2
            ),
            "1 retryable",
        ),
        (
            lambda c: store.fail_many(
                c, "w", [1, 2], [1, 2], [ERROR] * 2, ["failed"] * 2, [True] * 2, [0.0]
            ),
            "1 delays",
        ),
    ],
    "workhorse_sleep_many_v1": [
        (
            lambda c: store.sleep_many(c, "w", [1, 2], [1, 2], ["a"], [None, None], [0.0, 0.0]),
            "2 ids, 2 fences, 1 names",
        ),
        (
            lambda c: store.sleep_many(c, "w", [1], [1], ["a"], [None], [0.0, 1.0]),
            "1 wake times, 2 delays",
        ),
    ],
    "workhorse_claim_many_v1": [
        (lambda c: store.claim_many(c, "w", ["a", "b"], [1], 30), "2 queues but 1 limits"),
    ],
}
"""Every many-row function that takes parallel arrays, with calls whose arrays
do not line up. ``workhorse_enqueue_many_v1`` takes one JSON array of whole
jobs, so nothing in it can fail to line up."""

ONE_ARRAY = {"workhorse_enqueue_many_v1"}


def test_every_many_row_function_has_its_mismatched_arrays_tested():
    functions = {
        path.stem for path in SQL_DIR.glob("workhorse_*_many*_v1.sql") if "_many" in path.stem
    }
    assert functions - ONE_ARRAY == set(MISMATCHED)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        pytest.param(call, match, id=name)
        for name, calls in MISMATCHED.items()
        for call, match in calls
    ],
)
def test_arrays_that_do_not_line_up_are_refused(cursor, call, match):
    refused(lambda: call(cursor), match)


@pytest.mark.parametrize("kind", ["succeeded", "stalled", "bogus"])
def test_fail_many_refuses_an_attempt_outcome_that_is_not_a_failure(cursor, db_rows, kind):
    job = ActiveJobFactory()
    before = db_rows.fingerprint(job.id)
    refused(
        lambda: store.fail_many(
            cursor, job.worker, [job.id], [job.fence], [ERROR], [kind], [True], [0.0]
        ),
        f"unknown attempt outcome '{kind}'; use failed, timed_out or canceled",
    )
    assert db_rows.fingerprint(job.id) == before


def test_an_event_kind_outside_the_state_machine_is_refused_by_the_table(cursor):
    with pytest.raises(IntegrityError, match="workhorse_event_kind"), transaction.atomic():
        cursor.execute("INSERT INTO workhorse_job_event (job_id, kind) VALUES (1, 'teleported')")
    for kind in EventKind.values:
        with transaction.atomic():
            cursor.execute("INSERT INTO workhorse_job_event (job_id, kind) VALUES (1, %s)", [kind])
            transaction.set_rollback(True)
