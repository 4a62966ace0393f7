"""Sustained load on a server of the bench's own: does the queue hold its pace
for minutes when the tables churn and statistics go stale?

A producer enqueues no-op jobs at a fixed rate (``RATE`` jobs/s, ``BATCH``
per transaction, through the public ``enqueue_many``) while two
``runworker --concurrency 50`` processes drain them, for ``minutes``
minutes, twice: once with autovacuum on and once with it off (a queue must
not depend on when autovacuum last ran; the worker's sessions live for
days). The server is the embedded PostgreSQL (scripts/with_database.py),
started afresh for each run so that no earlier run's tables or statistics
count.

Printed per minute: the jobs the producer committed, the pickup latency
(attempt start minus job creation, p50 and p99, from attempt_history) and
the size of the runtime table with its indexes; then whether the last
minute's pickup p50 and producer rate are within 20% of the second
minute's.

    python -m bench sustained [--sustained-minutes 6]
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time

import psycopg

from .common import ROOT, report, section
from .worker import MANAGE, worker_env

RATE = 800
BATCH = 10
WORKERS = 2
CONCURRENCY = 50


def _embedded():
    spec = importlib.util.spec_from_file_location(
        "workhorse_with_database", ROOT / "scripts" / "with_database.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EmbeddedServer()


def produce(url: str, seconds: float, rate: int = RATE, batch: int = BATCH) -> None:
    """Run in a child process: enqueue ``rate`` jobs/s, ``batch`` per transaction,
    for ``seconds``; falls behind (and says so in the figures) when enqueue slows."""
    os.environ["DATABASE_URL"] = url
    sys.path.insert(0, str(ROOT / "testproject"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")
    import django

    django.setup()
    from demo.jobs import noop
    from django.db import transaction

    interval = batch / rate
    start = time.monotonic()
    tick = start
    while tick - start < seconds:
        with transaction.atomic():
            noop.enqueue_many([{}] * batch)
        tick += interval
        pause = tick - time.monotonic()
        if pause > 0:
            time.sleep(pause)


def one_run(autovacuum: bool, minutes: int) -> None:
    label = "on" if autovacuum else "off"
    server = _embedded()
    base_url = server.start()
    url = base_url.rsplit("/", 1)[0] + "/workhorse_sustained"
    admin = psycopg.connect(
        f"host=127.0.0.1 port={server.port} user=postgres dbname=postgres", autocommit=True
    )
    children: list[subprocess.Popen] = []
    try:
        admin.execute(f"ALTER SYSTEM SET autovacuum = {label}")
        explain = os.environ.get("WORKHORSE_BENCH_EXPLAIN_MS")
        if explain:  # diagnosis: the slow statements' plans go to the server log
            admin.execute("ALTER SYSTEM SET session_preload_libraries = 'auto_explain'")
            admin.execute(f"ALTER SYSTEM SET auto_explain.log_min_duration = '{int(explain)}ms'")
            admin.execute("ALTER SYSTEM SET auto_explain.log_nested_statements = on")
            print(f"  slow plans in {server.base}/server.log (kept)", flush=True)
        admin.execute("SELECT pg_reload_conf()")
        admin.execute("CREATE DATABASE workhorse_sustained")
        env = worker_env(url)
        subprocess.run([sys.executable, MANAGE, "migrate", "--verbosity", "0"], env=env, check=True)
        conn = psycopg.connect(
            f"host=127.0.0.1 port={server.port} user=postgres dbname=workhorse_sustained",
            autocommit=True,
        )
        # Statistics as a fresh deploy leaves them: taken on empty tables.
        conn.execute("ANALYZE")
        for _ in range(WORKERS):
            children.append(
                subprocess.Popen(
                    [sys.executable, MANAGE, "runworker", "--concurrency", str(CONCURRENCY)],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # both workers connected and listening
            listening = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND application_name LIKE 'workhorse-listener %%'"
            ).fetchone()[0]
            if listening >= WORKERS:
                break
            time.sleep(0.2)
        seconds = minutes * 60
        producer = subprocess.Popen(
            [
                sys.executable,
                "-c",
                f"import sys; from bench.sustained import produce; produce({url!r}, {seconds})",
            ],
            cwd=str(ROOT),
            env=env,
        )
        children.append(producer)
        started = conn.execute("SELECT now()").fetchone()[0]
        sizes: list[int] = []
        for _minute in range(minutes):
            time.sleep(60)
            sizes.append(
                conn.execute("SELECT pg_total_relation_size('workhorse_job_runtime')").fetchone()[0]
            )
        producer.wait(timeout=120)
        time.sleep(5)  # let the workers pick up the last jobs
        rows = conn.execute(
            """
            SELECT m, count(*) AS jobs,
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY pickup) AS p50,
                   percentile_cont(0.99) WITHIN GROUP (ORDER BY pickup) AS p99
            FROM (
                SELECT floor(extract(epoch FROM j.created_at - %(t0)s) / 60)::int AS m,
                       extract(epoch FROM h.started_at - j.created_at) * 1000 AS pickup
                FROM workhorse_job j
                LEFT JOIN workhorse_attempt_history h ON h.job_id = j.id AND h.attempt = 1
            ) s
            WHERE m < %(minutes)s
            GROUP BY m ORDER BY m
            """,
            {"t0": started, "minutes": minutes},
        ).fetchall()
        section(
            f"sustained load, autovacuum {label}: producer {RATE} jobs/s ({BATCH} per "
            f"transaction), {WORKERS} x runworker --concurrency {CONCURRENCY}, {minutes} min"
        )
        print(f"  {'minute':>6} {'produced/s':>11} {'pickup p50':>11} {'p99':>9} {'runtime':>10}")
        for (m, jobs, p50, p99), size in zip(rows, sizes, strict=False):
            print(
                f"  {m + 1:>6} {jobs / 60:>11,.0f} {p50 or 0:>9.1f}ms {p99 or 0:>7.1f}ms"
                f" {size / 1e6:>8.1f}MB",
                flush=True,
            )
        if len(rows) >= 3:
            second, last = rows[1], rows[-1]
            rate_ratio = last[1] / second[1]
            pickup_ratio = (last[2] or 0) / (second[2] or 1)
            report(
                f"last/second minute, producer rate (autovacuum {label})",
                rate_ratio,
                "x",
                "target 0.8-1.2",
            )
            report(
                f"last/second minute, pickup p50 (autovacuum {label})",
                pickup_ratio,
                "x",
                "target 0.8-1.2",
            )
        conn.close()
    finally:
        for child in children:
            child.terminate()
        for child in children:
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
        admin.close()
        if not os.environ.get("WORKHORSE_BENCH_EXPLAIN_MS"):
            server.stop()


def run(minutes: int = 6) -> None:
    for autovacuum in (
        (False, True) if os.environ.get("WORKHORSE_BENCH_AV_OFF_FIRST") else (True, False)
    ):
        one_run(autovacuum, minutes)
