"""Each hot query reads the narrow partial index built for it.

EXPLAIN of a function call shows only a Function Scan, so these tests EXPLAIN
the statements the functions run, read out of the shipped .sql files (a CTE by
name), with the PL/pgSQL variables replaced by literal parameters.
"""

import json
import re
from importlib import resources

import pytest
from demo.jobs import add

from django_workhorse.db import store
from django_workhorse.db.sql_files import read_sql

pytestmark = pytest.mark.django_db

QUEUES = ["plan-a", "plan-b", "plan-c"]


def latest(filename: str) -> str:
    """``<function>.sql``'s text as the migrations leave it: its last
    re-creation, ``<function>_<NNNN>.sql``, when there is one (docs/releasing.md)."""
    stem = filename.removesuffix(".sql")
    found = sorted(
        entry.name
        for entry in resources.files("django_workhorse").joinpath("sql").iterdir()
        if re.fullmatch(rf"{stem}(_\d{{4}})?\.sql", entry.name)
    )
    return read_sql(found[-1])


def cte(filename: str, name: str) -> str:
    """The body of the CTE ``name AS (...)`` in the latest ``django_workhorse/sql/<filename>``."""
    sql = latest(filename)
    match = re.search(rf"\b{name} AS \(", sql)
    assert match, f"no CTE {name!r} in {filename}: update this test with the function"
    depth, end = 1, match.end()
    while depth:
        depth += {"(": 1, ")": -1}.get(sql[end], 0)
        end += 1
    return sql[match.end() : end - 1]


def plan_nodes(cursor, statement: str, params: list) -> list[dict]:
    cursor.execute(f"EXPLAIN (FORMAT JSON) {statement}", params)
    raw = cursor.fetchone()[0]
    plan = raw if isinstance(raw, list) else json.loads(raw)
    nodes, todo = [], [plan[0]["Plan"]]
    while todo:
        node = todo.pop()
        nodes.append(node)
        todo.extend(node.get("Plans", []))
    return nodes


def runtime_scans(nodes: list[dict]) -> list[tuple[str, str | None]]:
    """(node type, index name) of every scan of workhorse_job_runtime."""
    return [
        (n["Node Type"], n.get("Index Name"))
        for n in nodes
        if n.get("Relation Name") == "workhorse_job_runtime"
    ]


def indexes_read(nodes: list[dict]) -> list[str]:
    """The indexes a plan reads (Index, Index Only and Bitmap Index Scans)."""
    return [n["Index Name"] for n in nodes if n.get("Index Name")]


@pytest.fixture(scope="module")
def busy_queues(committed_rows):
    """Some thousands of live jobs in every state a claim meets, with fresh statistics."""
    with committed_rows() as cursor:
        for queue in QUEUES:
            add.options(queue=queue).enqueue_many([{"a": i, "b": i} for i in range(1500)])
            add.options(queue=queue, delay=3600).enqueue_many(
                [{"a": i, "b": i} for i in range(150)]
            )
            store.claim_many(cursor, "plan-worker", [queue], [100], 30)
            store.claim_many(cursor, "plan-crashed", [queue], [10], 0)
        cursor.execute("ANALYZE workhorse_job_runtime")
        cursor.execute("ANALYZE workhorse_job")
        yield


def test_the_claim_reads_ready_jobs_best_first_from_the_ready_index(cursor, busy_queues):
    sql = read_sql("workhorse_claim_many_v1.sql")
    match = re.search(r"SELECT array_agg\(r\.job_id\) INTO v_ids(.*?\) r);", sql, re.S)
    assert match, "no picking statement in workhorse_claim_many_v1.sql: update this test"
    statement = "SELECT r.job_id" + match.group(1)
    statement = statement.replace("v_queues", "%s::text[]").replace("v_limits", "%s::integer[]")

    nodes = plan_nodes(cursor, statement, [QUEUES, [10, 10, 10]])

    assert runtime_scans(nodes) == [("Index Scan", "workhorse_runtime_ready")]
    assert not [n for n in nodes if n["Node Type"] in ("Sort", "Incremental Sort")]


def test_the_promotion_finds_due_scheduled_jobs_in_the_scheduled_index(cursor, busy_queues):
    due = cte("workhorse_claim_many_v1.sql", "due")
    statement = due.replace("v_queues", "%s::text[]").replace("v_promote", "%s::integer[]")

    nodes = plan_nodes(cursor, statement, [QUEUES, [1000, 1000, 1000]])

    assert runtime_scans(nodes) == [("Index Scan", "workhorse_runtime_scheduled")]
    assert not [n for n in nodes if n["Node Type"] in ("Sort", "Incremental Sort")]


def test_recovery_finds_expired_leases_among_the_active_jobs_alone(cursor, busy_queues):
    expired = cte("workhorse_recover_stalled_v1.sql", "expired")
    statement = expired.replace("p_limit", "%s").replace("v_live", "'{}'::text[]")
    statement = statement.replace("v_now", "now()")
    cursor.execute("SET LOCAL enable_seqscan = off")  # as the function runs

    nodes = plan_nodes(cursor, statement, [1000])

    # The active jobs of every queue, sorted by expiry: bounded by the
    # fleet's slots (runtime_active_v1.sql); each one's job by its key.
    assert sorted(indexes_read(nodes)) == ["workhorse_job_pkey", "workhorse_runtime_active"]


def test_a_limited_queues_count_of_active_jobs_reads_that_queues_entries_alone(cursor, busy_queues):
    sql = latest("workhorse_claim_many_v1.sql")
    start = sql.index("SELECT v_q.concurrency_limit - count(*)")
    statement = sql[start : sql.index(";", start)]
    statement = statement.replace("v_q.concurrency_limit", "4").replace("INTO v_room", "")
    statement = statement.replace("v_q.name", "%s")
    cursor.execute("SET LOCAL enable_seqscan = off")  # as the claim runs

    nodes = plan_nodes(cursor, statement, [QUEUES[0]])

    assert indexes_read(nodes) == ["workhorse_runtime_active"]
    (scan,) = [n for n in nodes if n.get("Index Name") == "workhorse_runtime_active"]
    assert "queue" in scan.get("Index Cond", ""), scan


def test_the_next_due_lookup_reads_the_scheduled_index(cursor, busy_queues):
    body = latest("workhorse_next_run_at_v1.sql")
    statement = body[body.index("SELECT min(least") : body.index(";\n    RETURN v_at")]
    statement = statement.replace("INTO v_at", "").replace("p_queues", "%s::text[]")
    # The function runs with enable_seqscan off, as the claim does.
    cursor.execute("SET LOCAL enable_seqscan = off")

    nodes = plan_nodes(cursor, statement, [QUEUES])

    # The scheduled index for due times; the ready index only to ask whether
    # a rate-limited queue has work waiting, the active index only to count a
    # concurrency-limited queue's active jobs.
    scans = runtime_scans(nodes)
    assert sorted(str(index) for _, index in scans) == [
        "workhorse_runtime_active",
        "workhorse_runtime_ready",
        "workhorse_runtime_scheduled",
    ], scans
