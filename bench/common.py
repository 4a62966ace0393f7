"""Shared set-up for the benchmarks: a database of their own, timing helpers."""

from __future__ import annotations

import os
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_DB = os.environ.get("WORKHORSE_BENCH_DB", "workhorse_bench")
"""The benchmark database (dropped and created by each run); name one of your own
with WORKHORSE_BENCH_DB when several people share a server."""


def setup_django() -> str:
    """Point Django at the benchmark database (created and migrated); return its URL."""
    import environ

    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/workhorse")
    parsed = environ.Env.db_url_config(base)
    url = base.rsplit("/", 1)[0] + "/" + BENCH_DB
    os.environ["DATABASE_URL"] = url
    sys.path.insert(0, str(ROOT / "testproject"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")
    import psycopg

    admin = psycopg.connect(
        host=parsed["HOST"] or None,
        port=parsed["PORT"] or None,
        user=parsed["USER"] or None,
        password=parsed["PASSWORD"] or None,
        dbname="postgres",
        autocommit=True,
    )
    # Created afresh for every run, so that it holds the SQL functions of the
    # code being measured, not those of the run that created it.
    admin.execute(f'DROP DATABASE IF EXISTS "{BENCH_DB}" WITH (FORCE)')
    admin.execute(f'CREATE DATABASE "{BENCH_DB}"')
    admin.close()
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return url


def raw_connection():
    from django_workhorse.worker.connection import connect

    return connect("default", application_name="workhorse-bench")


def reset(conn) -> None:
    """Empty every workhorse table (the benchmark database only)."""
    conn.execute(
        "TRUNCATE workhorse_job, workhorse_job_runtime, workhorse_job_outcome, "
        "workhorse_job_query, workhorse_job_dependency, workhorse_job_event, "
        "workhorse_attempt_history, "
        "workhorse_queue, workhorse_job_checkpoint, workhorse_queue_minute, "
        "workhorse_failure_hour, workhorse_bulk_action CASCADE"
    )
    conn.execute("VACUUM ANALYZE workhorse_job_runtime")


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * pct / 100
    low, high = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def report(name: str, value: float, unit: str, note: str = "") -> None:
    print(f"  {name:<58} {value:>12,.2f} {unit:<8} {note}", flush=True)


def section(title: str) -> None:
    print(f"\n== {title}", flush=True)


@contextmanager
def timed():
    box = {}
    start = time.perf_counter()
    yield box
    box["seconds"] = time.perf_counter() - start


def median(values: list[float]) -> float:
    return statistics.median(values)


def fabricate_history(conn, count: int, *, analyze: bool = True) -> None:
    """Put ``count`` terminal jobs in history: job, query projection, outcome
    and one attempt each, as the SQL functions leave them (a plain success
    stores no event: the timeline derives its enqueue, claim and success).

    Written in bulk with INSERT ... SELECT, a set-up shortcut that only the
    benchmark takes (running a million jobs through the functions here would
    take longer than the measurement itself). ``analyze=False`` leaves the
    statistics as they were (bench/growth.py wants them stale).
    """
    conn.execute(
        """
        WITH ids AS (
            SELECT nextval('workhorse_job_id_seq') AS id,
                   now() - interval '2 hours' + g * interval '1 millisecond' AS at
            FROM generate_series(1, %(count)s) g
        ), jobs AS (
            INSERT INTO workhorse_job (id, name, queue, payload, max_attempts, created_at)
            SELECT id, 'demo.jobs.noop', 'history', '{}', 5, at FROM ids
            RETURNING id, created_at
        ), projection AS (
            INSERT INTO workhorse_job_query (job_id, queue, name, created_at)
            SELECT id, 'history', 'demo.jobs.noop', created_at FROM jobs
        ), outcomes AS (
            INSERT INTO workhorse_job_outcome (job_id, state, result, attempts, finished_at)
            SELECT id, 'succeeded', 'null', 1, created_at + interval '5 ms' FROM jobs
        )
        INSERT INTO workhorse_attempt_history
            (job_id, attempt, outcome, worker_id, started_at, finished_at)
        SELECT id, 1, 'succeeded', 'history-maker', created_at + interval '1 ms',
               created_at + interval '5 ms'
        FROM jobs
        """.replace("%(count)s", str(int(count)))
    )
    if analyze:
        conn.execute("VACUUM ANALYZE")
