"""The live workers: the heartbeat's call records what a worker says of
itself (no call of its own), ``Admin.live_workers`` reads it with the jobs
each holds, a stopping worker leaves, and retention retires the dead."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from django_workhorse import Admin, InvalidQueryError
from django_workhorse.core.conf import RetentionSettings
from django_workhorse.db import store
from django_workhorse.operations.retention import prune
from django_workhorse.worker.presence import describe_worker
from tests.factories import ActiveJobFactory

transactional = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


def beat(worker_id: str, ids=(), fences=(), busy: int = 0, owner: str | None = None) -> None:
    info = describe_worker(worker_id, {"mail": 4, "reports": 1}, busy, 15.0, "batched")
    with connection.cursor() as cursor:
        store.heartbeat_many(
            cursor, owner or worker_id, list(ids), list(fences), 30, json.dumps(info)
        )


@pytest.mark.django_db
def test_a_heartbeat_with_no_jobs_records_the_worker_as_seen():
    beat("host-a:101:abc")

    (worker,) = Admin().live_workers()

    assert (worker.worker_id, worker.queues, worker.slots, worker.busy, worker.success_route) == (
        "host-a:101:abc",
        {"mail": 4, "reports": 1},
        5,
        0,
        "batched",
    )
    assert worker.pid and worker.host and worker.version and not worker.silent


@pytest.mark.django_db
def test_the_renewal_that_carries_the_description_counts_the_jobs_it_holds():
    job = ActiveJobFactory(worker="host-b:202:def+1")  # a second claim session's owner name

    beat("host-b:202:def", [job.id], [job.fence], busy=1, owner="host-b:202:def+1")

    (worker,) = Admin().live_workers()
    assert (worker.worker_id, worker.busy, worker.jobs_held) == ("host-b:202:def", 1, 1)


@pytest.mark.django_db
def test_a_worker_not_heard_from_for_three_turns_is_silent_and_a_stopped_one_is_gone():
    beat("host-c:1:aaa")
    beat("host-c:2:bbb")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE workhorse_worker SET last_seen_at = now() - interval '2 minutes'"
            " WHERE worker_id = 'host-c:1:aaa'"
        )
        store.worker_gone(cursor, "host-c:2:bbb")

    (worker,) = Admin().live_workers()

    assert worker.worker_id == "host-c:1:aaa" and worker.silent
    assert Admin().live_workers(seen_within_seconds=60) == []


@pytest.mark.parametrize("bad", [0, -1, "60", float("nan")])
def test_live_workers_refuse_a_window_that_is_not_a_positive_number_of_seconds(bad):
    with pytest.raises(InvalidQueryError, match="seen_within_seconds"):
        Admin().live_workers(seen_within_seconds=bad)


@transactional
def test_retention_removes_workers_not_seen_since_the_history_window():
    beat("host-d:1:old")
    beat("host-d:2:new")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE workhorse_worker SET last_seen_at = now() - interval '8 days'"
            " WHERE worker_id = 'host-d:1:old'"
        )
        prune(
            cursor,
            settings=RetentionSettings(
                history=7 * 86400, finished_jobs=None, interval=None, batch_size=100
            ),
        )
        cursor.execute("SELECT worker_id FROM workhorse_worker")
        assert cursor.fetchall() == [("host-d:2:new",)]
