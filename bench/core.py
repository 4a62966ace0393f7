"""Benchmarks of the durable core: enqueue, the SQL-only lifecycle, claim latency."""

from __future__ import annotations

import time

from django.db import connection
from django.test.utils import override_settings

from django_workhorse import store

from .common import fabricate_history, median, percentile, report, reset, section, timed


def calibrate(conn, count: int = 2000) -> dict[str, float]:
    """This machine's floor: one-row INSERT commits and a bare claim+delete.

    The issue's targets were set on a machine where a bare INSERT commit cost
    ~0.4 ms (~2,500/s) and bare claim+delete of 100 rows ran ~45,000 jobs/s;
    these two lines show what the same statements cost here and now.
    """
    conn.execute("DROP TABLE IF EXISTS bench_bare")
    conn.execute("CREATE TABLE bench_bare (id bigserial PRIMARY KEY, payload jsonb)")
    with conn.cursor() as cur, timed() as t:
        for _ in range(count):
            cur.execute("INSERT INTO bench_bare (payload) VALUES ('{}')")
    rates = {"insert": count / t["seconds"]}
    report("calibration: bare one-row INSERT, one commit each", rates["insert"], "rows/s")
    with conn.cursor() as cur, timed() as t:
        for _ in range(20):
            cur.execute(
                "INSERT INTO bench_bare (payload) SELECT '{}' FROM generate_series(1, 1000)"
            )
    report("calibration: bare INSERT of 1,000 rows per commit", 20_000 / t["seconds"], "rows/s")
    conn.execute("TRUNCATE bench_bare")
    conn.execute("INSERT INTO bench_bare (payload) SELECT '{}' FROM generate_series(1, 50000)")
    conn.execute("VACUUM ANALYZE bench_bare")
    done = 0
    with conn.cursor() as cur, timed() as t:
        while True:
            cur.execute(
                "WITH c AS (SELECT id FROM bench_bare ORDER BY id LIMIT 100"
                " FOR UPDATE SKIP LOCKED) DELETE FROM bench_bare b USING c WHERE b.id = c.id"
            )
            if cur.rowcount == 0:
                break
            done += cur.rowcount
    rates["claim_delete"] = done / t["seconds"]
    report(
        "calibration: bare claim+delete, 100 rows per statement", rates["claim_delete"], "rows/s"
    )
    conn.execute("DROP TABLE bench_bare")
    return rates


ONE_JOB_BATCH = (
    '[{"payload":{},"name":"demo.noop","queue":"bench","max_attempts":5,"priority":0,'
    '"backoff":null,"max_stalled":1}]'
)


def _bare_commits(conn, count: int) -> float:
    conn.execute("CREATE TABLE IF NOT EXISTS bench_bare (id bigserial PRIMARY KEY, payload jsonb)")
    with conn.cursor() as cur, timed() as t:
        for _ in range(count):
            cur.execute("INSERT INTO bench_bare (payload) VALUES ('{}')")
    conn.execute("DROP TABLE bench_bare")
    return count / t["seconds"]


_THREE_ROWS = """
WITH new_job AS (
    INSERT INTO workhorse_job AS j (id, name, queue, payload, max_attempts, priority, max_stalled)
    {source}
    RETURNING j.id, j.priority, j.created_at
), live AS (
    INSERT INTO workhorse_job_runtime (job_id, queue, priority, state, run_at)
    SELECT n.id, 'bench', n.priority, 'ready', now() FROM new_job n
)
INSERT INTO workhorse_job_query (job_id, queue, name, created_at)
SELECT n.id, 'bench', 'demo.jobs.noop', n.created_at FROM new_job n
"""
THREE_ROWS_ONE = _THREE_ROWS.format(
    source="VALUES (nextval('workhorse_job_id_seq'), 'demo.jobs.noop', 'bench', '{}', 5, 0, 1)"
)
"""The floor of any enqueue of this design: the three rows a job starts with
(job, runtime, the admin's projection) written by one bare statement, no SQL
function, no NOTIFY, no Django, no checks. Run as a prepared statement (parsed
and planned once, as PL/pgSQL runs the statements of a function), so that it
is a rate no enqueue can beat."""
THREE_ROWS_MANY = _THREE_ROWS.format(
    source="SELECT nextval('workhorse_job_id_seq'), 'demo.jobs.noop', 'bench', e.doc, 5, 0, 1"
    " FROM jsonb_array_elements(%s::jsonb) AS e(doc)"
)
"""``THREE_ROWS_ONE`` for a JSON array of payloads, one job each."""


def three_row_floor(conn, count: int) -> float:
    """``THREE_ROWS_ONE``, one job per commit on a bare psycopg connection; jobs/s."""
    with conn.cursor() as cur, timed() as t:
        for _ in range(count):
            cur.execute(THREE_ROWS_ONE, prepare=True)
    return count / t["seconds"]


def three_row_floor_bulk(conn, batches: int, size: int = 1000) -> float:
    """``THREE_ROWS_MANY`` of ``size`` jobs per commit, ``batches`` times; jobs/s."""
    payloads = "[" + ",".join(["{}"] * size) + "]"
    reset(conn)
    with conn.cursor() as cur, timed() as t:
        for _ in range(batches):
            cur.execute(THREE_ROWS_MANY, [payloads], prepare=True)
    return batches * size / t["seconds"]


def as_in_production() -> override_settings:
    """Settings as a production process has them: ``DEBUG`` off.

    The test project runs with ``DEBUG`` on (``make demo``), and under it
    Django logs every query on its connection, which enqueue then takes
    (docs/decisions.md, "The single enqueue, end to end"); a producer in
    production does neither. The enqueue figures are taken with it off.
    """
    return override_settings(DEBUG=False)


def _public_enqueues(count: int) -> float:
    from demo.jobs import noop

    with as_in_production(), timed() as t:
        for _ in range(count):
            noop.enqueue()
    return count / t["seconds"]


def _one_job_batches(count: int) -> float:
    """The path a single enqueue took before workhorse_enqueue_batch_v1: a
    one-job JSON array through workhorse_enqueue_many_v1, on Django's cursor."""
    with as_in_production(), timed() as t:
        for _ in range(count):
            with connection.cursor() as cursor:
                store.enqueue_many(cursor, ONE_JOB_BATCH)
    return count / t["seconds"]


def enqueue_single(conn, count: int = 500, turns: int = 7) -> float:
    """One job per transaction through the public API, against a bare one-row
    INSERT commit and a one-job ``enqueue_many`` batch, in turns; then the
    same with ``synchronous_commit = off`` on both connections, which leaves
    out the WAL flush (this machine's noisiest part) and shows the CPU cost."""
    reset(conn)
    connection.ensure_connection()
    _public_enqueues(100)  # warm up: plans cached, pages in memory
    rate = 0.0
    for flush in ("on", "off"):
        conn.execute(f"SET synchronous_commit = {flush}")
        with connection.cursor() as cursor:
            cursor.execute(f"SET synchronous_commit = {flush}")
        bare, public, batch, floor = [], [], [], []
        for _ in range(turns):
            bare.append(_bare_commits(conn, count))
            public.append(_public_enqueues(count))
            batch.append(_one_job_batches(count))
            floor.append(three_row_floor(conn, count))
        label = "" if flush == "on" else " (synchronous_commit off: no WAL flush)"
        report(f"bare one-row INSERT, one commit each{label}", median(bare), "rows/s")
        report(
            f"floor: a job's three rows in one bare statement, one commit each{label}",
            median(floor),
            "jobs/s",
            "no function, NOTIFY, Django or checks",
        )
        report(
            "  floor / bare INSERT commit",
            median(floor) / median(bare),
            "x",
            "the most a three-row enqueue can reach",
        )
        report(
            f"enqueue, one job per transaction (public API, DEBUG off){label}",
            median(public),
            "jobs/s",
            f"{min(public):,.0f}-{max(public):,.0f} over {turns} turns",
        )
        target = "target >= 0.8" if flush == "on" else ""
        report("  ratio to the bare INSERT commit", median(public) / median(bare), "x", target)
        report(f"one-job enqueue_many batch, one per transaction{label}", median(batch), "jobs/s")
        report("  public enqueue / one-job batch", median(public) / median(batch), "x")
        report("  public enqueue / floor", median(public) / median(floor), "x")
        rate = rate or median(public)
    conn.execute("RESET synchronous_commit")
    with connection.cursor() as cursor:
        cursor.execute("RESET synchronous_commit")
    return rate


def bulk_enqueues(conn, batches: int = 20, size: int = 1000) -> float:
    """``enqueue_many`` of ``size`` jobs, ``batches`` times, from an empty store."""
    from demo.jobs import noop

    reset(conn)
    payloads = [{} for _ in range(size)]
    noop.enqueue_many(payloads)  # warm up
    reset(conn)
    with as_in_production(), timed() as t:
        for _ in range(batches):
            noop.enqueue_many(payloads)
    return batches * size / t["seconds"]


def enqueue_batches(conn, batches: int = 20, size: int = 1000, turns: int = 5) -> float:
    """``enqueue_many`` of ``size`` jobs against the floor of the same writes,
    in turns (each ``batches`` calls from an empty store); medians."""
    ours, floors, ratios = [], [], []
    for _ in range(turns):
        ours.append(bulk_enqueues(conn, batches, size))
        floors.append(three_row_floor_bulk(conn, batches, size))
        ratios.append(ours[-1] / floors[-1])
    rate = median(ours)
    report(
        f"enqueue_many, batches of {size:,} (public API, DEBUG off)",
        rate,
        "jobs/s",
        f"target >= 60,000; {min(ours):,.0f}-{max(ours):,.0f} over {turns} turns",
    )
    report(f"floor: {size:,} jobs' three rows in one bare statement", median(floors), "jobs/s")
    report(
        "  enqueue_many / floor, per turn",
        median(ratios),
        "x",
        f"{min(ratios):.2f}-{max(ratios):.2f}",
    )
    return rate


def _lifecycle_round(conn, claims, count: int, batch: int, *, flush: bool = True) -> float:
    """claim_many(batch) on ``claims`` + succeed_many on ``conn`` until ``count``
    jobs are done; jobs/s. ``flush=False``: the claims commit as a worker's do."""
    from demo.jobs import noop

    reset(conn)
    for _ in range(count // 1000):
        noop.enqueue_many([{}] * 1000)
    conn.execute("VACUUM ANALYZE workhorse_job_runtime")
    done = 0
    with conn.cursor() as cur, claims.cursor() as claim_cur, timed() as t:
        while True:
            jobs = store.claim_many(claim_cur, "bench-sql", ["bench"], [batch], 30, flush=flush)
            if not jobs:
                break
            store.succeed_many(
                cur,
                "bench-sql",
                [j.job_id for j in jobs],
                [j.fence for j in jobs],
                ["null"] * len(jobs),
            )
            done += len(jobs)
    return done / t["seconds"]


_FLOOR_CLAIM = """
UPDATE workhorse_job_runtime r
SET state = 'active', worker_id = 'bench-floor', fence = r.fence + 1, attempt = r.attempt + 1,
    lease_expires_at = now() + interval '30 seconds', attempt_started_at = now()
FROM (SELECT job_id FROM workhorse_job_runtime
      WHERE queue = 'bench' AND state = 'ready'
      ORDER BY priority DESC, run_at, job_id LIMIT %s FOR UPDATE SKIP LOCKED) c
WHERE r.job_id = c.job_id
RETURNING r.job_id
"""
_FLOOR_SUCCEED = """
WITH ended AS (
    DELETE FROM workhorse_job_runtime WHERE job_id = ANY(%s::bigint[])
    RETURNING job_id, attempt, attempt_started_at
), outcome AS (
    INSERT INTO workhorse_job_outcome (job_id, state, attempts)
    SELECT e.job_id, 'succeeded', e.attempt FROM ended e
)
INSERT INTO workhorse_attempt_history (job_id, attempt, outcome, worker_id, started_at)
SELECT e.job_id, e.attempt, 'succeeded', 'bench-floor', e.attempt_started_at FROM ended e
"""


def _lifecycle_floor_round(conn, count: int, batch: int) -> float:
    """The floor of the SQL lifecycle in this design: per batch, one bare
    statement marks ``batch`` ready runtime rows active (no job row read, no
    checks) and one deletes them, writing the outcome and attempt rows a
    success leaves. No function, fence check, event or hook; both prepared
    statements; jobs/s."""
    from demo.jobs import noop

    reset(conn)
    for _ in range(count // 1000):
        noop.enqueue_many([{}] * 1000)
    conn.execute("VACUUM ANALYZE workhorse_job_runtime")
    done = 0
    with conn.cursor() as cur, timed() as t:
        while True:
            cur.execute(_FLOOR_CLAIM, [batch], prepare=True)
            ids = [row[0] for row in cur.fetchall()]
            if not ids:
                break
            cur.execute(_FLOOR_SUCCEED, [ids], prepare=True)
            done += len(ids)
    return done / t["seconds"]


def sql_lifecycle(
    conn, bare: float | None = None, count: int = 10_000, batch: int = 100, turns: int = 3
) -> float:
    """The SQL lifecycle, no handler: every commit waiting for its WAL flush
    (the issue's figure, one connection), then as a worker commits (its claims
    without waiting for their flush: docs/decisions.md), in
    turns; each against ``bare``, the bare claim+delete of the calibration."""
    from django_workhorse.worker.connection import connect

    claims = connect("default", application_name="workhorse-bench")
    flushed, as_worker, floor = [], [], []
    try:
        for _ in range(turns):
            flushed.append(_lifecycle_round(conn, conn, count, batch))
            as_worker.append(_lifecycle_round(conn, claims, count, batch, flush=False))
            floor.append(_lifecycle_floor_round(conn, count, batch))
    finally:
        claims.close()
    rate = median(flushed)
    label = f"SQL lifecycle: claim_many({batch}) + succeed_many, no handler"
    report(label, rate, "jobs/s", f"median of {turns}")
    if bare:
        report("  ratio to the bare claim+delete", rate / bare, "x", "target >= 0.25")
    worker_rate = median(as_worker)
    report("  the same, claims committed as the worker commits them", worker_rate, "jobs/s")
    if bare:
        report("  ratio to the bare claim+delete", worker_rate / bare, "x")
    report(
        f"floor: the design's rows of a success in two bare statements ({batch} a statement)",
        median(floor),
        "jobs/s",
        "no function, fence, event or job row read",
    )
    if bare:
        report(
            "  floor / the bare claim+delete",
            median(floor) / bare,
            "x",
            "the most this design's lifecycle can reach",
        )
    report("  SQL lifecycle / floor", rate / median(floor), "x")
    return rate


def claim_latencies(conn, samples: int = 1000, backlog: int = 5000) -> list[float]:
    """Latency of claim_many for one job with ``backlog`` ready jobs waiting."""
    from demo.jobs import noop

    conn.execute("DELETE FROM workhorse_job_runtime WHERE queue = 'bench'")
    for _ in range(backlog // 1000):
        noop.enqueue_many([{}] * 1000)
    # Fresh statistics for every table, so that both runs plan alike.
    conn.execute("VACUUM ANALYZE")
    latencies = []
    claimed: list = []
    with conn.cursor() as cur:
        for _ in range(samples):
            start = time.perf_counter()
            jobs = store.claim_many(cur, "bench-latency", ["bench"], [1], 30)
            latencies.append((time.perf_counter() - start) * 1000)
            claimed.extend(jobs)
            if len(claimed) >= 200:
                store.succeed_many(
                    cur,
                    "bench-latency",
                    [j.job_id for j in claimed],
                    [j.fence for j in claimed],
                    ["null"] * len(claimed),
                )
                claimed = []
            if len(claimed) == 0 and not jobs:
                noop.enqueue_many([{}] * 1000)
    return latencies


def claim_commit_cost(conn, rounds: int = 3, samples: int = 300) -> None:
    """Claim latency with the claim's commit waiting for its WAL flush and
    without, in turns (docs/decisions.md, "A fence never repeats")."""
    section("claim commit: synchronous_commit off (as claimed) vs on, in turns")
    for turn in range(rounds):
        for mode in ("off", "on"):
            conn.execute(f"SET synchronous_commit = {mode}")
            latencies = claim_latencies(conn, samples=samples, backlog=2000)
            report(
                f"turn {turn + 1}: claim latency p50, synchronous_commit={mode}",
                percentile(latencies, 50),
                "ms",
            )
    conn.execute("RESET synchronous_commit")


def claim_latency_ratio(conn, history: int) -> tuple[float, float]:
    reset(conn)
    empty = claim_latencies(conn)
    p50e, p99e = percentile(empty, 50), percentile(empty, 99)
    report("claim latency p50, empty history", p50e, "ms")
    report("claim latency p99, empty history", p99e, "ms")
    reset(conn)
    print(f"  (putting {history:,} terminal jobs in history...)", flush=True)
    with timed() as t:
        fabricate_history(conn, history)
    print(f"  (done in {t['seconds']:.0f} s)", flush=True)
    full = claim_latencies(conn)
    p50f, p99f = percentile(full, 50), percentile(full, 99)
    report(f"claim latency p50, {history:,} terminal jobs", p50f, "ms")
    report(f"claim latency p99, {history:,} terminal jobs", p99f, "ms")
    report("ratio p50 (full / empty)", p50f / p50e, "x", "must be <= 1.2")
    report("ratio p99 (full / empty)", p99f / p99e, "x")
    return p50f / p50e, p99f / p99e


def run(conn, history: int) -> None:
    section("durable core (issue: the durable core)")
    rates = calibrate(conn)
    enqueue_single(conn)
    enqueue_batches(conn)
    sql_lifecycle(conn, rates["claim_delete"])
    claim_latency_ratio(conn, history)
