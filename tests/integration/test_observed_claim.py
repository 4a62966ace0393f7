"""The observed claim (tracing or metrics on) hands out what the plain claim
would: the same jobs in the same order, with the same columns, read back
from the rows the claim wrote; plus each job's trace context, time since
enqueue and pickup."""

from __future__ import annotations

import dataclasses
import json

import pytest
from demo.jobs import add

from django_workhorse import store

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


def comparable(job: store.ClaimedJob, ids: list[int]) -> dict:
    """The columns of a claimed job that must not differ between the two
    claims of twin jobs: which twin, and everything but its queue and lease."""
    row = dataclasses.asdict(job)
    row["job_id"] = ids.index(job.job_id)
    for key in ("queue", "lease_expires_at", "trace"):
        del row[key]
    return row


def test_the_observed_claim_hands_out_what_the_plain_claim_would(pg_connect):
    plain_ids, observed_ids = enqueue("obs-plain"), enqueue("obs-observed")
    conn = pg_connect()

    with conn.cursor() as cursor:
        plain = store.claim_many(cursor, "w-plain", ["obs-plain"], [10], 30)
    with conn.cursor() as cursor:
        observed, pickups = store.claim_many_observed(
            cursor, "w-observed", ["obs-observed"], [10], 30
        )

    assert [comparable(j, observed_ids) for j in observed] == [
        comparable(j, plain_ids) for j in plain
    ]
    assert [j.job_id for j in observed] == [observed_ids[i] for i in (1, 3, 0, 2)]
    for job in observed:
        row = conn.execute(
            "SELECT worker_id, fence, attempt, lease_expires_at, cancel_requested"
            " FROM workhorse_job_runtime WHERE job_id = %s AND state = 'active'",
            [job.job_id],
        ).fetchone()
        assert row == (
            "w-observed",
            job.fence,
            job.attempt,
            job.lease_expires_at,
            job.cancel_requested,
        )
        trace_context, waited = job.trace
        assert trace_context is None and waited >= 0
    assert all(p is not None and p >= 0 for p in pickups)
    assert json.dumps(observed[0].payload) == json.dumps({"a": 2, "b": 10})
