"""Each row of the claim says what tracing and metrics need about its job:
the producer's trace context, the seconds since its enqueue and since it
was due (its pickup), on the database clock from the attempt's start. So a
worker calls the same claim whatever is switched on."""

from __future__ import annotations

import json

import pytest
from demo.jobs import add

from django_workhorse.db import store

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])

JOBS = [
    {"priority": 0, "timeout": None, "a": 1},
    {"priority": 5, "timeout": 2.5, "a": 2},
    {"priority": -3, "timeout": None, "a": 3},
    {"priority": 5, "timeout": 30, "a": 4},
]


def enqueue(queue: str) -> list[int]:
    ids = []
    for job in JOBS:
        options = {"queue": queue, "priority": job["priority"], "max_attempts": 4}
        if job["timeout"] is not None:
            options["timeout"] = job["timeout"]
        ids.append(add.options(**options).enqueue(a=job["a"], b=10).id)
    return ids


def test_each_claimed_job_carries_its_trace_context_wait_and_pickup(pg_connect):
    ids = enqueue("obs-claim")
    traced = add.options(queue="obs-traced").enqueue(a=5, b=10)
    conn = pg_connect()
    conn.execute(
        "UPDATE workhorse_job SET trace_context = %s WHERE id = %s",
        [
            '{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "n": 1}',
            traced.id,
        ],
    )
    conn.execute(
        "UPDATE workhorse_job_runtime SET run_at = now() - interval '2 seconds' WHERE job_id = %s",
        [ids[1]],
    )

    with conn.cursor() as cursor:
        jobs = store.claim_many(cursor, "w-obs", ["obs-claim", "obs-traced"], [10, 10], 30)

    assert [j.job_id for j in jobs if j.queue == "obs-claim"] == [ids[i] for i in (1, 3, 0, 2)]
    for job in jobs:
        started_at, run_at, created_at = conn.execute(
            "SELECT rt.attempt_started_at, rt.run_at, j.created_at"
            " FROM workhorse_job_runtime rt JOIN workhorse_job j ON j.id = rt.job_id"
            " WHERE rt.job_id = %s",
            [job.job_id],
        ).fetchone()
        assert job.pickup == pytest.approx((started_at - run_at).total_seconds(), abs=1e-6)
        assert job.waited == pytest.approx((started_at - created_at).total_seconds(), abs=1e-6)
    by_id = {j.job_id: j for j in jobs}
    assert by_id[ids[1]].pickup >= 2
    assert by_id[ids[0]].trace is None  # enqueued without a trace context
    context, waited = by_id[traced.id].trace
    # Text values only, as a propagation carrier takes them.
    assert context == {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    assert waited == by_id[traced.id].waited
    assert json.dumps(by_id[ids[1]].payload) == json.dumps({"a": 2, "b": 10})


def test_a_claim_that_writes_successes_first_carries_the_same_columns(pg_connect):
    enqueue("obs-one")
    conn = pg_connect()
    with conn.cursor() as cursor:
        (job,) = store.claim_many(cursor, "w-one", ["obs-one"], [1], 30)
        succeeded, jobs = store.succeed_and_claim(
            cursor, "w-one", [job.job_id], [job.fence], ["1"], ["obs-one"], [1], 30
        )
    assert succeeded == [(job.job_id, True)]
    (nxt,) = jobs
    assert nxt.pickup is not None and nxt.pickup >= 0
    assert nxt.waited is not None and nxt.waited >= 0
