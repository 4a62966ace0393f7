"""Claims hand out the best ready job first: higher priority, then FIFO.
A delayed job becomes claimable at its run_at, with no sweep in between."""

import time

import pytest
from demo.jobs import add

from django_workhorse.db import store

pytestmark = pytest.mark.django_db


def claim_ids(cursor, queue, limit, worker="worker-order"):
    return [c.job_id for c in store.claim_many(cursor, worker, [queue], [limit], 30)]


def test_higher_priority_is_claimed_first(cursor):
    low = add.options(queue="order", priority=-5).enqueue(a=1, b=1)
    high = add.options(queue="order", priority=50).enqueue(a=1, b=1)
    normal = add.options(queue="order").enqueue(a=1, b=1)

    assert claim_ids(cursor, "order", 1) == [high.id]
    assert claim_ids(cursor, "order", 1) == [normal.id]
    assert claim_ids(cursor, "order", 1) == [low.id]


def test_jobs_of_one_priority_are_claimed_in_enqueue_order(cursor):
    handles = add.options(queue="fifo").enqueue_many([{"a": i, "b": i} for i in range(10)])
    claimed = [
        claim_ids(cursor, "fifo", 3),
        claim_ids(cursor, "fifo", 3),
        claim_ids(cursor, "fifo", 4),
    ]
    assert [job_id for batch in claimed for job_id in batch] == [h.id for h in handles]


def test_a_batch_comes_back_best_first(cursor):
    ids = {p: add.options(queue="batch", priority=p).enqueue(a=1, b=1).id for p in (0, 9, -9, 3)}
    assert claim_ids(cursor, "batch", 10) == [ids[9], ids[3], ids[0], ids[-9]]


def test_a_claim_takes_only_from_the_queues_it_names(cursor):
    add.options(queue="elsewhere").enqueue(a=1, b=1)
    mine = add.options(queue="mine").enqueue(a=1, b=1)
    assert claim_ids(cursor, "mine", 10) == [mine.id]
    assert claim_ids(cursor, "mine", 10) == []


def test_a_claim_honours_each_queues_limit(cursor):
    add.options(queue="qa").enqueue_many([{"a": i, "b": i} for i in range(5)])
    add.options(queue="qb").enqueue_many([{"a": i, "b": i} for i in range(5)])
    claimed = store.claim_many(cursor, "w", ["qa", "qb", "qc"], [2, 3, 4], 30)
    assert sorted(c.queue for c in claimed) == ["qa", "qa", "qb", "qb", "qb"]


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])
def test_a_delayed_job_is_not_claimable_before_its_run_at_and_is_after_it(cursor, db_rows):
    job = add.options(queue="later", delay=1.0).enqueue(a=1, b=2)
    run_at = db_rows.runtime(job.id)["run_at"]

    assert claim_ids(cursor, "later", 10) == []
    assert db_rows.runtime(job.id)["state"] == "scheduled"

    wait = (run_at - db_rows.now()).total_seconds()
    assert wait > 0, "the claim above must have happened before run_at"
    time.sleep(wait + 0.02)

    assert claim_ids(cursor, "later", 10) == [job.id]
    assert db_rows.runtime(job.id)["state"] == "active"


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])
def test_next_run_at_tells_an_idle_worker_when_to_look_again(cursor, db_rows):
    assert store.next_run_at(cursor, ["soon"]) is None
    job = add.options(queue="soon", delay=60).enqueue(a=1, b=2)
    add.options(queue="soon", delay=120).enqueue(a=1, b=2)
    assert store.next_run_at(cursor, ["soon"]) == db_rows.runtime(job.id)["run_at"]
    assert store.next_run_at(cursor, ["other"]) is None


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])
def test_due_scheduled_jobs_are_claimed_by_priority_not_by_run_at(cursor, db_rows):
    # Every job is due by the claim; the low-priority ones came due first.
    low = [add.options(queue="due", delay=0.2).enqueue(a=i, b=0) for i in range(3)]
    high = add.options(queue="due", delay=0.3, priority=50).enqueue(a=9, b=9)
    wait = (db_rows.runtime(high.id)["run_at"] - db_rows.now()).total_seconds()
    time.sleep(max(0.0, wait) + 0.02)

    assert claim_ids(cursor, "due", 1) == [high.id]
    assert claim_ids(cursor, "due", 3) == [job.id for job in low]
