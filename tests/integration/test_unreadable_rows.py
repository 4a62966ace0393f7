"""Stored JSON that Python cannot decode is isolated where it is read.

Only SQL callers can store it (``enqueue`` refuses it): a number of 5,000
digits is valid jsonb but beyond Python's integer-string limit.
"""

from __future__ import annotations

import pytest

import django_workhorse as workhorse
from django_workhorse.db import store
from django_workhorse.testing import run_jobs

pytestmark = pytest.mark.django_db

HUGE = "9" * 5000

REPLAYED: list[object] = []


@workhorse.job(queue="tests.unreadable.stage", name="tests.unreadable.stage", max_attempts=3)
def staged() -> str:
    REPLAYED.append(workhorse.current_job().checkpoint("stage", lambda: {"n": 1}))
    return "done"


def enqueue_sql(cursor, payload_json: str) -> int:
    cursor.execute(
        "SELECT job_id FROM workhorse_enqueue_v1('tests.unreadable', 'unreadable', %s::jsonb)",
        [payload_json],
    )
    return cursor.fetchone()[0]


def test_a_claim_marks_the_unreadable_job_and_decodes_its_batch_mates(cursor):
    first = enqueue_sql(cursor, '{"n": 1}')
    poison = enqueue_sql(cursor, '{"n": ' + HUGE + "}")
    last = enqueue_sql(cursor, '{"n": 3}')

    claimed = {j.job_id: j for j in store.claim_many(cursor, "w", ["unreadable"], [10], 30)}

    assert (claimed[first].payload, claimed[first].unreadable) == ({"n": 1}, None)
    assert (claimed[last].payload, claimed[last].unreadable) == ({"n": 3}, None)
    assert claimed[poison].payload == {}
    assert claimed[poison].unreadable.startswith(
        f"the stored payload of job #{poison} cannot be read by Python's JSON decoder"
    )


def test_a_snapshot_shows_a_payload_it_cannot_decode_as_its_json_text(cursor):
    poison = enqueue_sql(cursor, '{"n": ' + HUGE + "}")

    job = workhorse.Admin().get_job(poison)

    assert job.payload == '{"n": ' + HUGE + "}"


def test_a_stage_python_cannot_read_fails_its_job_without_retry_instead_of_replaying(cursor):
    handle = staged.enqueue()
    (claim,) = store.claim_many(cursor, "sql-worker", ["tests.unreadable.stage"], [1], 30)
    cursor.execute(
        "SELECT ok FROM workhorse_checkpoint_v1(%s, 'sql-worker', %s, 'stage', %s::jsonb)",
        [claim.job_id, claim.fence, '{"n": ' + HUGE + "}"],
    )
    assert cursor.fetchone() == (True,)
    assert store.release_many(cursor, "sql-worker", [claim.job_id], [claim.fence])[0][1]

    report = run_jobs(names=[staged])

    assert REPLAYED == []
    assert isinstance(report.runs[0].error, workhorse.InvalidCheckpointError)
    assert "the stored result of checkpoint 'stage' cannot be read by Python's JSON decoder" in (
        str(report.runs[0].error)
    )
    assert (handle.refresh().status, handle.attempts) == ("failed", 1)
