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
        bare, public, batch = [], [], []
        for _ in range(turns):
            bare.append(_bare_commits(conn, count))
            public.append(_public_enqueues(count))
            batch.append(_one_job_batches(count))
        label = "" if flush == "on" else " (synchronous_commit off: no WAL flush)"
        report(f"bare one-row INSERT, one commit each{label}", median(bare), "rows/s")
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


def enqueue_batches(conn, batches: int = 20, size: int = 1000) -> float:
    rate = bulk_enqueues(conn, batches, size)
    report(
        f"enqueue_many, batches of {size:,} (public API, DEBUG off)",
        rate,
        "jobs/s",
        "target >= 60,000",
    )
    return rate


def _lifecycle_round(conn, claims, count: int, batch: int) -> float:
    """claim_many(batch) on ``claims`` + succeed_many on ``conn`` until ``count``
    jobs are done; jobs/s."""
    from demo.jobs import noop

    reset(conn)
    for _ in range(count // 1000):
        noop.enqueue_many([{}] * 1000)
    conn.execute("VACUUM ANALYZE workhorse_job_runtime")
    done = 0
    with conn.cursor() as cur, claims.cursor() as claim_cur, timed() as t:
        while True:
            jobs = store.claim_many(claim_cur, "bench-sql", ["bench"], [batch], 30)
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


def sql_lifecycle(
    conn, bare: float | None = None, count: int = 10_000, batch: int = 100, turns: int = 3
) -> float:
    """The SQL lifecycle, no handler: every commit waiting for its WAL flush
    (the issue's figure, one connection), then as a worker commits (its claims
    on a session with ``synchronous_commit = off``: docs/decisions.md), in
    turns; each against ``bare``, the bare claim+delete of the calibration."""
    from django_workhorse.worker.connection import connect

    claims = connect("default", application_name="workhorse-bench", wait_for_flush=False)
    flushed, as_worker = [], []
    try:
        for _ in range(turns):
            flushed.append(_lifecycle_round(conn, conn, count, batch))
            as_worker.append(_lifecycle_round(conn, claims, count, batch))
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
