"""Shared set-up for the benchmarks: a database of their own, timing helpers."""

from __future__ import annotations

import os
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_DB = "workhorse_bench"


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
    exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [BENCH_DB]).fetchone()
    if not exists:
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
        "workhorse_job_query, workhorse_job_event, workhorse_attempt_history, "
        "workhorse_queue CASCADE"
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


def fabricate_history(conn, count: int, batch: int = 20_000) -> None:
    """Put ``count`` terminal jobs (with their events and attempts) in history,
    through the real SQL functions, in server-side batches."""
    conn.execute(
        """
        DO $$
        DECLARE
            done integer := 0;
            ids bigint[];
            fences bigint[];
        BEGIN
            WHILE done < %(count)s LOOP
                PERFORM workhorse_enqueue_many_v1((
                    SELECT jsonb_agg(jsonb_build_object(
                        'name', 'demo.jobs.noop', 'queue', 'history', 'payload', '{}'::jsonb))
                    FROM generate_series(1, least(%(batch)s, %(count)s - done))));
                SELECT array_agg(c.job_id), array_agg(c.fence) INTO ids, fences
                FROM workhorse_claim_many_v1('history-maker', ARRAY['history'],
                                             ARRAY[%(batch)s], 60) c;
                PERFORM workhorse_succeed_many_v1('history-maker', ids, fences,
                    array_fill('null'::jsonb, ARRAY[cardinality(ids)]));
                done := done + cardinality(ids);
                COMMIT;
            END LOOP;
        END $$;
        """.replace("%(count)s", str(int(count))).replace("%(batch)s", str(int(batch)))
    )
    conn.execute("VACUUM ANALYZE")
