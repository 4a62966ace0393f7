"""A session that first ran the functions on empty tables keeps fast plans.

PL/pgSQL caches each statement's plan for the life of the session, and after
five calls it may keep a generic plan made with the statistics of that
moment. A worker's sessions live for days; if they started on empty tables
(a new deployment) and nothing analyzed the tables since (autovacuum late or
off), a cached plan that scans the table it expected to be empty reads every
row of a backlog on every call: a 50-job claim took 300 ms instead of 2.

The hot-path functions therefore run with ``enable_seqscan = off`` (a SET
clause of each function): their statements all find rows by key or through
a partial index, so an index path is always the plan, whatever the
statistics say. This test warms a session on empty, analyzed tables, grows a
backlog without analyzing, and counts the sequential scans the same
session's calls then make (``pg_stat_xact_user_tables``, the counts of the
current transaction): there must be none on the big tables.
"""

from __future__ import annotations

import json

import pytest
from demo.jobs import add

from django_workhorse.db import store

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])

QUEUE = "stale-plans"
BIG = ("workhorse_job", "workhorse_job_runtime", "workhorse_job_query", "workhorse_job_outcome")


def jobs_json(count: int, key: str | None = None) -> str:
    doc = {"name": add.name, "queue": QUEUE, "payload": {"a": 1, "b": 1}}
    return json.dumps(
        [{**doc, "idempotency_key": f"{key}-{i}"} if key else doc for i in range(count)]
    )


def one_of_each(conn, round_: int) -> None:
    """The worker's and the producer's calls, once each, on ``conn``."""
    cursor = conn.cursor()
    store.enqueue_many(cursor, jobs_json(10))
    store.enqueue_many(cursor, jobs_json(2, key=f"k{round_}"))
    claimed = store.claim_many(cursor, "stale-w", [QUEUE], [6], 30)
    ids, fences = [c.job_id for c in claimed], [c.fence for c in claimed]
    cursor.execute(
        "SELECT count(*) FROM workhorse_heartbeat_many_v1('stale-w', %s, %s, 30)", [ids, fences]
    )
    error = json.dumps({"type": "ValueError", "message": "boom"})
    store.succeed_many(cursor, "stale-w", ids[:2], fences[:2], ["null"] * 2)
    store.fail_many(
        cursor,
        "stale-w",
        ids[2:4],
        fences[2:4],
        [error] * 2,
        ["failed"] * 2,
        [True] * 2,
        [None] * 2,
    )
    cursor.execute(
        "SELECT count(*) FROM workhorse_release_many_v1('stale-w', %s, %s)", [ids[4:], fences[4:]]
    )
    # A one-slot worker's finish and next claim in one call; the job it
    # claims is released like the others.
    (one,) = store.claim_many(cursor, "stale-w", [QUEUE], [1], 30)
    _, (two,) = store.succeed_and_claim(
        cursor, "stale-w", [one.job_id], [one.fence], ["null"], [QUEUE], [1], 30
    )
    store.release_many(cursor, "stale-w", [two.job_id], [two.fence])
    cursor.execute("SELECT count(*) FROM workhorse_recover_stalled_v1()")


def seq_scans(conn) -> dict[str, int]:
    rows = conn.execute(
        "SELECT relname, seq_scan FROM pg_stat_xact_user_tables WHERE relname = ANY (%s)",
        [list(BIG)],
    ).fetchall()
    return {name: count for name, count in rows if count}


def test_a_session_warmed_on_empty_tables_stays_on_indexes_as_the_backlog_grows(pg_connect):
    setup = pg_connect()
    for table in BIG:
        # Empty and truncated to no pages, with the statistics of that: a new
        # deployment's tables (earlier tests may have left dead rows behind).
        setup.execute(f"VACUUM (ANALYZE) {table}")
    worker = pg_connect()
    for round_ in range(8):  # past the five calls after which a generic plan may stick
        one_of_each(worker, round_)

    for _ in range(20):  # a backlog the statistics do not know of
        store.enqueue_many(setup.cursor(), jobs_json(1000))

    with worker.transaction():
        one_of_each(worker, 100)
        assert seq_scans(worker) == {}
