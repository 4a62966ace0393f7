"""Helpers shared by the conftest files and tests (not fixtures)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

WORKHORSE_TABLES = (
    "workhorse_job",
    "workhorse_job_runtime",
    "workhorse_job_outcome",
    "workhorse_job_query",
    "workhorse_job_dependency",
    "workhorse_job_event",
    "workhorse_attempt_history",
    "workhorse_queue",
    "workhorse_schedule",
    "workhorse_job_checkpoint",
    "workhorse_queue_minute",
    "workhorse_failure_hour",
    "workhorse_worker",
    "workhorse_bulk_action",
)
"""Every table that holds jobs, their counters or queue policy (not the schema version)."""


def delete_workhorse_rows(cursor: Any) -> None:
    """Empty every workhorse table but ``workhorse_schema``.

    DELETE, not TRUNCATE: for the few rows a test leaves it takes
    milliseconds, where TRUNCATE of the partitioned history tables (new files
    for every partition) takes most of a second.
    """
    cursor.execute("SELECT to_regclass('workhorse_job') IS NOT NULL")
    if cursor.fetchone()[0]:
        for table in (*WORKHORSE_TABLES[1:], WORKHORSE_TABLES[0]):
            cursor.execute(f"DELETE FROM {table}")


def poll_until(
    predicate: Callable[[], Any],
    *,
    timeout: float,
    interval: float,
    what: str | None = None,
    context: Callable[[], str] | None = None,
) -> Any:
    """Poll ``predicate`` until it returns something truthy and return that;
    fail after ``timeout`` seconds naming ``what``, followed by ``context()``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            message = f"not within {timeout} s: {what or predicate!r}"
            if context is not None:
                message += f"\n{context()}"
            pytest.fail(message, pytrace=False)
        time.sleep(interval)


def cut_connections(application_name: str) -> int:
    """Terminate the test database's sessions of ``application_name`` (as a
    network failure or a DBA would); how many were cut. A worker's
    connections are named ``<role> <worker id>``: the role matches them."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database()"
            " AND (application_name = %s OR application_name LIKE %s)",
            [application_name, application_name.replace("%", r"\%") + " %"],
        )
        return cursor.fetchone()[0]


PGBOUNCER_POOL_SIZE = 3
"""Server connections the test PgBouncer keeps: fewer than a worker's
threads and handlers want at once, so that they take turns, as in production."""

POOLED = os.environ.get("WORKHORSE_TEST_PGBOUNCER", "") == "1"
"""This run reaches the test database through PgBouncer (see above)."""

DIRECT: dict[str, Any] = {}
"""The test database's own settings (HOST, PORT, ...) while ``POOLED``
points Django's connection at PgBouncer."""


def direct_settings() -> dict[str, Any]:
    """The settings that reach the test database itself, pooled run or not."""
    from django.db import connection

    return DIRECT or connection.settings_dict


def start_pgbouncer(upstream_url: str, **options: Any) -> Any:
    """A ``PgBouncer`` (scripts/pgbouncer.py, loaded by path) in front of
    ``upstream_url``, not started yet: use it as a context manager."""
    import importlib.util

    name = "workhorse_pgbouncer_script"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / "pgbouncer.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module.PgBouncer(upstream_url, **options)


REPO = Path(__file__).resolve().parents[1]

SUB_RUN_SETTINGS = """\
from testproject.settings import *  # noqa: F403

DATABASES["default"].update(NAME={name!r}, TEST={{"NAME": {name!r}}})  # noqa: F405
"""
"""The settings of a pytest sub-run: the project's, on the outer run's test
database (kept, never created or dropped, by ``--reuse-db``)."""


def run_pytest(
    tmp_path: Path, files: Mapping[str, str], *args: str, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """Run pytest with pytest-django on ``files`` (name to text) in a process
    of its own, against this test run's database: what the user's own test
    suite would see. Call it from a ``transactional_db`` test, so that this
    process holds no transaction the sub-run would wait for."""
    from django.db import connection

    (tmp_path / "sub_run_settings.py").write_text(
        SUB_RUN_SETTINGS.format(name=connection.settings_dict["NAME"])
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    settings = ["--ds", "sub_run_settings"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO), str(REPO / "testproject")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--reuse-db", *settings, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def timeline_events(cursor: Any, job_ids: list[int], kind: str) -> list[tuple[int, Any, int]]:
    """(job_id, at, attempt) of every ``kind`` event the jobs' timelines show,
    in time order: stored events and those the timeline derives (an enqueue,
    a claim, a success)."""
    cursor.execute(
        "SELECT j.id, t.at, t.attempt FROM unnest(%s::bigint[]) AS j(id),"
        " workhorse_job_timeline_v1(j.id, p_limit => 100000) AS t"
        " WHERE t.source = 'event' AND t.kind = %s ORDER BY t.at, j.id",
        [list(job_ids), kind],
    )
    return [tuple(row) for row in cursor.fetchall()]


# -- dead tuples and the worker's vacuum turn (docs/worker.md#vacuum) ---------

AUTO_EXPLAIN_SETTINGS = (
    "auto_explain.log_min_duration = 0",
    "auto_explain.log_nested_statements = on",
    "auto_explain.log_analyze = on",
    "auto_explain.log_timing = off",
    "auto_explain.log_level = notice",
)
"""auto_explain as the plan tests set it: every statement, nested ones too,
with row counts, sent to the client as notices."""


CHURN_TABLES = ("workhorse_job_runtime", "workhorse_queue", "workhorse_schedule")
"""The tables ``workhorse_vacuum_due_v1`` looks at."""


def table_stats(cursor: Any, table: str) -> dict[str, Any]:
    """``n_dead_tup``, ``n_live_tup``, ``vacuum_count`` and ``last_vacuum`` of
    a table, from the cumulative statistics (read afresh: ``cursor`` must be
    in autocommit mode, or a transaction keeps its first snapshot of them)."""
    cursor.execute(
        "SELECT n_dead_tup, n_live_tup, vacuum_count, last_vacuum FROM pg_stat_user_tables"
        " WHERE relid = %s::regclass",
        [table],
    )
    names = ("n_dead_tup", "n_live_tup", "vacuum_count", "last_vacuum")
    return dict(zip(names, cursor.fetchone(), strict=True))


def vacuum_counts(cursor: Any) -> dict[str, int]:
    """``vacuum_count`` of each table with churn."""
    return {table: table_stats(cursor, table)["vacuum_count"] for table in CHURN_TABLES}


@contextlib.contextmanager
def autovacuum_off(cursor: Any) -> Iterator[None]:
    """Autovacuum leaves the tables with churn alone while the block runs, so
    that only the VACUUMs a test expects clear their dead tuples, whatever
    the server's own setting (the embedded server runs autovacuum)."""
    for table in CHURN_TABLES:
        cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
    try:
        yield
    finally:
        for table in CHURN_TABLES:
            cursor.execute(f"ALTER TABLE {table} RESET (autovacuum_enabled)")


def vacuum_churn_tables(cursor: Any) -> None:
    """VACUUM the tables with churn now (autocommit cursor), so that dead
    tuples left by earlier tests (autovacuum may be off) count for nothing."""
    for table in CHURN_TABLES:
        cursor.execute(f"VACUUM {table}")


def make_dead_runtime_rows(cursor: Any, count: int, queue: str = "vacuum-churn") -> None:
    """``count`` live runtime rows and ``count`` dead tuples of them: jobs
    scheduled a day ahead (no claim reads their pages, so none prunes them),
    each row updated once, the statistics of this session flushed at once.
    ``cursor`` must be in autocommit mode."""
    from demo.jobs import add

    add.options(queue=queue, delay=86400).enqueue_many([{"a": i, "b": 0} for i in range(count)])
    cursor.execute("UPDATE workhorse_job_runtime SET run_at = run_at WHERE queue = %s", [queue])
    cursor.execute("SELECT pg_stat_force_next_flush()")


@contextlib.contextmanager
def side_alias() -> Iterator[str]:
    """A second database alias, ``side``, on the test database, as a project
    with two aliases has: a connection of its own, so what it has not
    committed the default connection does not see."""
    from django.db import connections

    connections.settings["side"] = dict(connections["default"].settings_dict)
    try:
        yield "side"
    finally:
        connections["side"].close()
        del connections["side"]
        del connections.settings["side"]


EVERY_FEATURE = {
    "LOCK_DURATION": 2,
    "STALLED_INTERVAL": 0.5,
    "SCHEDULE_SWEEP_INTERVAL": 0.2,
    "QUEUE_METRICS_INTERVAL": 0.2,
    "VACUUM_INTERVAL": 0.2,
    "SCHEDULES": {"tick": {"job": "jobtests.jobs.record", "cron": "* * * * * *"}},
    "RETENTION": {"FINISHED_JOBS": 1, "INTERVAL": 0.3},
}
"""Short cadences, so that every loop of the worker runs many times: lease
renewals, stall sweeps, schedule sweeps, the depth sampler, vacuum turns
and retention."""
