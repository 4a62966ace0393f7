"""Recovery takes back jobs whose lease expired. Stalls have their own budget
(max_stalled) and never consume an attempt."""

import pytest
from demo.jobs import add

from django_workhorse.db import store
from tests.factories import ActiveJobFactory

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


def test_a_lease_of_zero_seconds_is_expired_for_the_next_transaction(cursor, db_rows):
    job = ActiveJobFactory(lease_seconds=0)
    assert [r.job_id for r in store.recover_stalled(cursor)] == [job.id]


def test_a_live_lease_is_not_recovered(cursor):
    ActiveJobFactory(lease_seconds=30)
    assert store.recover_stalled(cursor) == []


def test_a_recovered_job_is_ready_again_without_losing_an_attempt(cursor, db_rows):
    job = ActiveJobFactory(lease_seconds=0, worker="crashed")

    (recovered,) = store.recover_stalled(cursor)

    assert (recovered.attempt, recovered.stall_count, recovered.failed) == (1, 1, False)
    runtime = db_rows.runtime(job.id)
    assert (runtime["state"], runtime["attempt"], runtime["stall_count"]) == ("ready", 0, 1)
    assert runtime["worker_id"] is None and runtime["lease_expires_at"] is None
    history = db_rows.of_job(job.id)["attempts"]
    assert [(h["outcome"], h["worker_id"]) for h in history] == [("stalled", "crashed")]


def test_a_job_that_stalls_past_max_stalled_fails(cursor, db_rows):
    job = add.options(queue="stalls", max_stalled=1).enqueue(a=1, b=1)
    for _ in range(2):
        (claim,) = store.claim_many(cursor, "crashing", ["stalls"], [1], 0)
        (recovered,) = store.recover_stalled(cursor)
    assert recovered.failed
    assert claim.attempt == 1
    outcome = db_rows.outcome(job.id)
    assert (outcome["state"], outcome["stall_count"]) == ("failed", 2)
    assert db_rows.runtime(job.id) is None


def test_recovery_honours_its_limit(cursor):
    for _ in range(3):
        ActiveJobFactory(lease_seconds=0)
    assert len(store.recover_stalled(cursor, limit=2)) == 2
    assert len(store.recover_stalled(cursor, limit=2)) == 1
