"""Whole SQL functions, run for real, never scan a table or compare rows pair by pair.

``test_query_plans`` checks the statement that picks jobs; this module runs
each batch function as the worker calls it, under ``auto_explain`` with nested
statements, and reads the executed plan of every statement inside. A plan
that hashes a sequential scan of ``workhorse_job_runtime`` or ``workhorse_job``
costs time in proportion to the backlog (it once cost 6 of the 7 ms of a
100-job claim); a nested loop that filters one CTE against another costs
batch² comparisons. Both depend on statistics, so the tables are analyzed
with thousands of live rows, as a worker meets them, and each function is
called a few times first: PL/pgSQL may switch to a generic plan after five.
"""

import re

import pytest
from demo.jobs import add

from django_workhorse.db import store
from tests.helpers import AUTO_EXPLAIN_SETTINGS

pytestmark = pytest.mark.django_db

QUEUE = "plan-fn"
BATCH = 100


@pytest.fixture(scope="module")
def backlog(committed_rows):
    """5,000 ready jobs and fresh statistics."""
    with committed_rows() as cursor:
        for _ in range(5):
            add.options(queue=QUEUE).enqueue_many([{"a": i, "b": i} for i in range(1000)])
        cursor.execute("ANALYZE workhorse_job_runtime")
        cursor.execute("ANALYZE workhorse_job")
        yield


@pytest.fixture
def explained(cursor):
    """Run statements with every nested plan sent back as a notice; yields the list."""
    from django.db import connection

    plans: list[str] = []
    raw = connection.connection

    def collect(diagnostic) -> None:
        message = diagnostic.message_primary or ""
        if "plan:" in message:
            plans.append(message)

    cursor.execute("LOAD 'auto_explain'")
    for setting in AUTO_EXPLAIN_SETTINGS:
        cursor.execute(f"SET LOCAL {setting}")
    raw.add_notice_handler(collect)
    try:
        yield plans
    finally:
        raw.remove_notice_handler(collect)


def problems(plans: list[str]) -> list[str]:
    """Whole-table scans and pairwise join filters in ``plans``, quoted."""
    found = []
    for plan in plans:
        if "FOR KEY SHARE" in plan:
            continue  # a foreign-key check: one primary-key probe
        for line in plan.splitlines():
            if re.search(r"Seq Scan on workhorse_job(_runtime)? ", line):
                found.append(line.strip())
            removed = re.search(r"Rows Removed by Join Filter: (\d+)", line)
            if removed and int(removed.group(1)) >= BATCH:
                found.append(line.strip())
    return found


def claim(cursor, worker: str = "plan-w") -> list[store.ClaimedJob]:
    return store.claim_many(cursor, worker, [QUEUE], [BATCH], 30)


@pytest.fixture
def warmed(backlog, cursor):
    """Six calls of every batch function on this connection, before the measured one."""
    for _ in range(6):
        jobs = store.claim_many(cursor, "plan-warm", [QUEUE], [10], 30)
        ids, fences = [j.job_id for j in jobs], [j.fence for j in jobs]
        store.heartbeat_many(cursor, "plan-warm", ids, fences, 30)
        store.release_many(cursor, "plan-warm", ids[:2], fences[:2])
        store.fail_many(
            cursor,
            "plan-warm",
            ids[2:4],
            fences[2:4],
            ["{}"] * 2,
            ["failed"] * 2,
            [True, False],
            [None, None],
        )
        store.succeed_many(cursor, "plan-warm", ids[4:], fences[4:], ["null"] * len(ids[4:]))


def test_a_claim_of_a_batch_stays_on_indexes(warmed, cursor, explained):
    jobs = claim(cursor)

    assert len(jobs) == BATCH
    assert len(explained) > 3
    assert problems(explained) == []


def test_succeeding_a_batch_stays_on_indexes(warmed, cursor, explained):
    jobs = claim(cursor)
    explained.clear()

    rows = store.succeed_many(
        cursor, "plan-w", [j.job_id for j in jobs], [j.fence for j in jobs], ["null"] * len(jobs)
    )

    assert all(ok for _, ok in rows)
    assert problems(explained) == []


def test_failing_a_batch_stays_on_indexes(warmed, cursor, explained):
    jobs = claim(cursor)
    explained.clear()
    n = len(jobs)

    rows = store.fail_many(
        cursor,
        "plan-w",
        [j.job_id for j in jobs],
        [j.fence for j in jobs],
        ['{"type": "E", "message": "m"}'] * n,
        ["failed"] * n,
        [j.job_id % 2 == 0 for j in jobs],  # half retried, half terminal
        [0.0] * n,
    )

    assert all(r.ok for r in rows)
    assert problems(explained) == []


def test_heartbeat_and_release_of_a_batch_stay_on_indexes(warmed, cursor, explained):
    jobs = claim(cursor)
    explained.clear()
    ids, fences = [j.job_id for j in jobs], [j.fence for j in jobs]

    renewed = store.heartbeat_many(cursor, "plan-w", ids, fences, 30)
    released = store.release_many(cursor, "plan-w", ids, fences)

    assert len(renewed) == len(released) == BATCH
    assert problems(explained) == []


def test_putting_a_batch_to_sleep_and_recording_a_stage_stay_on_indexes(warmed, cursor, explained):
    jobs = claim(cursor)
    for _ in range(6):  # past PL/pgSQL's switch to a generic plan
        store.write_checkpoint(cursor, jobs[0].job_id, "plan-w", jobs[0].fence, "s", "1")
    explained.clear()
    n = len(jobs)

    ok, _ = store.write_checkpoint(cursor, jobs[1].job_id, "plan-w", jobs[1].fence, "s", "1")
    slept = store.sleep_many(
        cursor,
        "plan-w",
        [j.job_id for j in jobs],
        [j.fence for j in jobs],
        ["nap"] * n,
        [None] * n,
        [0.0 if j.job_id % 2 else 60.0 for j in jobs],  # half ready at once, half scheduled
    )

    assert ok and all(r[1] for r in slept)
    assert problems(explained) == []


def test_the_check_finds_a_whole_table_scan(cursor, explained):
    """The detector itself: a plain scan of the runtime table is reported."""
    cursor.execute("SET LOCAL enable_indexscan = off")
    cursor.execute("SET LOCAL enable_bitmapscan = off")
    cursor.execute("SELECT count(*) FROM workhorse_job_runtime WHERE job_id = 1")

    assert any("Seq Scan on workhorse_job_runtime" in p for p in problems(explained))


def test_settling_dependents_of_a_batch_stays_on_indexes(warmed, cursor, explained):
    """A batch whose jobs each have a dependent, and one job waiting for all
    of them, among thousands of other edges: the settle function's reads
    are probes too. (With a few pages of edges a scan is cheaper, and taken.)"""
    jobs = claim(cursor)
    ids = [j.job_id for j in jobs]
    for job_id in ids:
        add.options(queue="plan-dependents", depends_on=[job_id]).enqueue(a=0, b=0)
    add.options(queue="plan-dependents", depends_on=ids).enqueue(a=0, b=0)
    cursor.execute("SELECT job_id FROM workhorse_job_runtime WHERE state = 'ready' LIMIT 4000")
    others = [row[0] for row in cursor.fetchall()]
    add.options(queue="plan-others", depends_on=others).enqueue_many([{"a": 0, "b": 0}] * 3)
    cursor.execute("ANALYZE workhorse_job_dependency")
    explained.clear()

    rows = store.succeed_many(cursor, "plan-w", ids, [j.fence for j in jobs], ["null"] * len(ids))

    assert all(ok for _, ok in rows)
    assert any("workhorse_job_dependency" in plan for plan in explained)
    assert problems(explained) == []
    scans = [p for p in explained if "Seq Scan on workhorse_job_dependency" in p]
    assert not scans, scans[0]
    cursor.execute(
        "SELECT count(*) FROM workhorse_job_runtime WHERE queue = 'plan-dependents'"
        " AND state = 'ready'"
    )
    assert cursor.fetchone()[0] == BATCH + 1


def test_a_plain_batch_probes_the_edges_even_beside_a_live_fan_out(warmed, cursor, explained):
    """ANALYZE of a table where one prerequisite holds every edge makes any
    id look like it has thousands of dependents; the success of a batch
    nobody waits for must still probe, not scan (docs/sql.md)."""
    cursor.execute("SELECT job_id FROM workhorse_job_runtime WHERE queue = %s LIMIT 1", [QUEUE])
    (root,) = cursor.fetchone()
    add.options(queue="plan-fan-out", depends_on=[root]).enqueue_many([{"a": 0, "b": 0}] * 3000)
    cursor.execute("ANALYZE workhorse_job_dependency")
    jobs = [j for j in claim(cursor) if j.job_id != root]
    explained.clear()

    rows = store.succeed_many(
        cursor, "plan-w", [j.job_id for j in jobs], [j.fence for j in jobs], ["null"] * len(jobs)
    )

    assert all(ok for _, ok in rows)
    gate = [p for p in explained if "workhorse_job_dependency" in p]
    assert gate and not [p for p in gate if "Seq Scan" in p], gate[0]
