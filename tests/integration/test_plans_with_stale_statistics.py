"""Every function of the enqueue, claim and finish paths (and the operator's
cancel, retry and promote) reads a batch's rows, never a whole table or a
whole partial index, with the statistics of empty tables.

``test_plans_from_empty_tables`` counts sequential scans; a plan can also
read everything through an index. With the statistics of empty tables a
partial index looks like one empty page, so a probe by job id that also
tests the state (``job_id = x AND state = 'blocked'``) was planned as a full
scan of ``workhorse_runtime_blocked`` filtered by job id, and read every
blocked job of the fleet once per dependent it settled (and likewise every
scheduled job for a promote). This module reads the executed plan of every
statement (``auto_explain`` with nested statements) in two sessions:

- ``warmed-on-empty``: a session that ran every function on empty, analyzed
  tables, as a worker or producer started on a new deployment does;
- ``stale-statistics``: a new session whose tables were analyzed while
  empty and then grew;

each against thousands of rows in every live state, in the edges and in
the history. No plan node may read or discard 1,000 rows or more: the calls
here touch a few rows each.
"""

from __future__ import annotations

import json
import re

import psycopg
import pytest
from demo.jobs import add

from django_workhorse.db import store
from tests.helpers import AUTO_EXPLAIN_SETTINGS

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])

MANY = 3000
TOO_MANY = 1000
ANALYZED = (
    "workhorse_job",
    "workhorse_job_runtime",
    "workhorse_job_query",
    "workhorse_job_outcome",
    "workhorse_job_dependency",
    "workhorse_job_checkpoint",
    "workhorse_attempt_history",
    "workhorse_job_event",
)
PAYLOAD = '[{"a": 1, "b": 1}]'


def jobs_json(count: int, queue: str, **extra: object) -> str:
    doc = {"name": add.name, "queue": queue, "payload": {"a": 1, "b": 1}, **extra}
    return json.dumps([doc] * count)


def keyed_json(keys: list[str], queue: str) -> str:
    return json.dumps(
        [
            {"name": add.name, "queue": queue, "payload": {"a": 1, "b": 1}, "idempotency_key": k}
            for k in keys
        ]
    )


def enqueue(cursor, doc: str) -> list[int]:
    return [job_id for job_id, _ in store.enqueue_many(cursor, doc)]


def every_call(conn: psycopg.Connection, plans: list[str], round_: int) -> dict[str, list[str]]:
    """Each function once (most with rows to act on); the plans of each call,
    by call, from ``plans``, where ``conn`` collects them."""
    calls: dict[str, list[str]] = {}
    cur = conn.cursor()

    def call(what: str, fn, *args):
        plans.clear()
        result = fn(cur, *args)
        calls[what] = list(plans)
        return result

    q = "stale-calls"
    call("enqueue_many", store.enqueue_many, jobs_json(8, q))
    call(
        "enqueue_many, new keys",
        store.enqueue_many,
        keyed_json([f"r{round_}-a", f"r{round_}-b"], q),
    )
    call("enqueue_many, a stored key", store.enqueue_many, keyed_json(["grown-7"], "stale-grown"))
    call(
        "enqueue_batch, one job",
        lambda c: c.execute(
            "SELECT * FROM workhorse_enqueue_batch_v1(%s, %s::jsonb, %s)", [add.name, PAYLOAD, q]
        ),
    )
    call(
        "enqueue_batch, a stored key",
        lambda c: c.execute(
            "SELECT * FROM workhorse_enqueue_batch_v1(%s, %s::jsonb, %s,"
            " p_idempotency_key => 'grown-8')",
            [add.name, PAYLOAD, "stale-grown"],
        ),
    )
    call(
        "enqueue_batch, two jobs",
        lambda c: c.execute(
            "SELECT * FROM workhorse_enqueue_batch_v1(%s, %s::jsonb, %s)",
            [add.name, '[{"a": 1, "b": 1}, {"a": 2, "b": 2}]', q],
        ),
    )
    (scheduled,) = call(
        "enqueue_v1, scheduled",
        lambda c: c.execute(
            "SELECT job_id FROM workhorse_enqueue_v1(%s, %s, %s::jsonb, p_delay => 3600)",
            [add.name, q, '{"a": 1, "b": 1}'],
        ).fetchone(),
    )

    jobs = call("claim_many", store.claim_many, "stale-w", [q], [12], 30)
    ids, fences = [j.job_id for j in jobs], [j.fence for j in jobs]
    assert len(ids) == 12
    # Two dependents of the first claimed job and one of the third, which
    # fails for good below (its dependent is canceled).
    call("enqueue_many, with prerequisites", enqueue, jobs_json(2, q, depends_on=ids[:1]))
    enqueue(cur, jobs_json(1, q, depends_on=ids[2:3]))
    call("heartbeat_many", store.heartbeat_many, "stale-w", ids, fences, 30)
    call("checkpoint", store.write_checkpoint, ids[0], "stale-w", fences[0], "step", "1")
    call(
        "succeed_many, settling dependents",
        store.succeed_many,
        "stale-w",
        ids[:2],
        fences[:2],
        ["null"] * 2,
    )
    call("enqueue_many, an ended prerequisite", enqueue, jobs_json(1, q, depends_on=ids[:1]))
    call(
        "fail_many, a retry and an end",
        store.fail_many,
        "stale-w",
        [ids[3], ids[2]],
        [fences[3], fences[2]],
        ['{"type": "E", "message": "m"}'] * 2,
        ["failed"] * 2,
        [True, False],
        [0.0, 0.0],
    )
    call("release_many", store.release_many, "stale-w", ids[4:6], fences[4:6])
    call(
        "sleep_many",
        store.sleep_many,
        "stale-w",
        ids[6:8],
        fences[6:8],
        ["nap"] * 2,
        [None, None],
        [0.0, 60.0],
    )
    call(
        "succeed_and_claim",
        store.succeed_and_claim,
        "stale-w",
        ids[8:9],
        fences[8:9],
        ["null"],
        [q],
        [1],
        30,
    )
    call("cancel, active", store.cancel_job, ids[9], "r", "op")

    (ready,) = enqueue(cur, jobs_json(1, q))
    enqueue(cur, jobs_json(1, q, depends_on=[ready]))
    call("cancel, ready with a dependent", store.cancel_job, ready, "r", "op")
    call("cancel, scheduled", store.cancel_job, scheduled, "r", "op")
    call("retry, failed with a canceled dependent", store.retry_job, ids[2], "r", False)
    call("retry, canceled with a dependent", store.retry_job, ready, "r", False)
    (later,) = enqueue(cur, jobs_json(1, q, delay=3600))
    call("promote", store.promote_job, later)

    stalled = store.claim_many(cur, "stale-gone", [q], [2], 0.001)
    assert stalled
    cur.execute("SELECT pg_sleep(0.01)")
    call("recover_stalled", store.recover_stalled)
    return calls


def explaining(conn: psycopg.Connection) -> list[str]:
    """The list where every executed plan of ``conn``'s statements, nested
    ones too, is collected."""
    plans: list[str] = []

    def collect(diagnostic) -> None:
        message = diagnostic.message_primary or ""
        if "plan:" in message:
            plans.append(message)

    conn.add_notice_handler(collect)
    conn.execute("LOAD 'auto_explain'")
    for setting in AUTO_EXPLAIN_SETTINGS:
        conn.execute(f"SET {setting}")
    return plans


def wide_reads(plan: str) -> list[str]:
    """Plan lines that read or discard TOO_MANY rows or more, or scan a table."""
    found = []
    for line in plan.splitlines():
        if re.search(r"Seq Scan on workhorse_", line):
            found.append(line.strip())
        read = re.search(r" on workhorse_\w+.*actual rows=(\d+) loops=(\d+)", line)
        if read and int(read.group(1)) * int(read.group(2)) >= TOO_MANY:
            found.append(line.strip())
        removed = re.search(r"Rows Removed by (Join )?Filter: (\d+)", line)
        if removed and int(removed.group(2)) >= TOO_MANY:
            found.append(line.strip())
    return found


def grow(conn: psycopg.Connection) -> None:
    """Thousands of rows in every live state, edges, outcomes and history;
    nothing analyzed."""
    cur = conn.cursor()
    for start in range(0, 5 * MANY, 1000):
        keys = [f"grown-{i}" for i in range(start, start + 1000)]
        store.enqueue_many(cur, keyed_json(keys, "stale-grown"))
    enqueue(cur, jobs_json(MANY, "stale-grown", delay=3600))
    enqueue(cur, jobs_json(MANY, "stale-active"))
    store.claim_many(cur, "stale-other", ["stale-active"], [MANY], 3600)
    enqueue(cur, jobs_json(MANY, "stale-history"))
    done = store.claim_many(cur, "stale-other", ["stale-history"], [MANY], 3600)
    store.succeed_many(
        cur, "stale-other", [j.job_id for j in done], [j.fence for j in done], ["null"] * len(done)
    )
    (root,) = enqueue(cur, jobs_json(1, "stale-root"))
    enqueue(cur, jobs_json(MANY, "stale-fan-out", depends_on=[root]))


@pytest.mark.parametrize("session", ["warmed-on-empty", "stale-statistics"])
def test_no_call_reads_a_whole_table_or_index(pg_connect, session):
    setup = pg_connect()
    for table in ANALYZED:
        setup.execute(f"VACUUM (ANALYZE) {table}")
    caller = pg_connect()
    plans = explaining(caller)
    if session == "warmed-on-empty":
        for round_ in range(8):  # past the five calls after which a generic plan may stick
            every_call(caller, plans, round_)
        grow(setup)
    else:
        grow(setup)
        for round_ in range(8):
            every_call(caller, plans, round_)

    calls = every_call(caller, plans, 100)

    assert all(calls.values()), [what for what, plans in calls.items() if not plans]
    wide = {
        what: [line for plan in plans for line in wide_reads(plan)] for what, plans in calls.items()
    }
    assert {what: lines for what, lines in wide.items() if lines} == {}
