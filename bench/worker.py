"""Benchmarks of runworker: drain rate, pickup latency, history ratio, recovery."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import ROOT, fabricate_history, median, percentile, report, reset, section

MANAGE = str(ROOT / "testproject" / "manage.py")
DRAIN_RUNS = 3


def worker_env(url: str, **settings) -> dict[str, str]:
    env = dict(os.environ, DATABASE_URL=url, WORKHORSE_JSON=json.dumps(settings))
    env.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")
    return env


def start_worker(url: str, *flags: str, **settings) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, MANAGE, "runworker", *flags],
        env=worker_env(url, **settings),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def enqueue_noops(conn, count: int, queue: str = "bench") -> None:
    """``count`` no-op jobs through ``workhorse_enqueue_many_v1`` on ``conn``
    (which may be another database than Django's), 1,000 per call."""
    from demo.jobs import anoop, noop

    from django_workhorse import store

    job = anoop if queue == "bench-async" else noop
    for start in range(0, count, 1000):
        rows_json, _ = job._rows_json([{}] * min(1000, count - start))
        with conn.cursor() as cursor:
            store.enqueue_many(cursor, rows_json)


def drained_span(conn, queue: str) -> tuple[int, float]:
    """Jobs finished and the seconds from the first claim to the last finish (DB clock)."""
    row = conn.execute(
        "SELECT count(*), extract(epoch FROM max(h.finished_at) - min(h.started_at))"
        " FROM workhorse_attempt_history h JOIN workhorse_job j ON j.id = h.job_id"
        " WHERE j.queue = %s AND h.outcome = 'succeeded'",
        [queue],
    ).fetchone()
    return row[0], float(row[1] or 0)


def wait_drained(conn, total: int, queue: str, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = conn.execute(
            "SELECT count(*) FROM workhorse_job_runtime WHERE queue = %s", [queue]
        ).fetchone()[0]
        if left == 0:
            return
        time.sleep(0.2)
    raise TimeoutError(f"{total} jobs not drained in {timeout} s")


def drain(
    conn, url: str, jobs: int, processes: int, concurrency: int, queue: str = "bench"
) -> tuple[float, float]:
    """Drain ``jobs`` no-op jobs with ``processes`` burst workers; (jobs/s, CPU ms per job).

    Queue ``bench`` holds the sync no-op, ``bench-async`` the async one.
    """
    conn.execute("DELETE FROM workhorse_job_runtime WHERE queue = %s", [queue])
    for table in ("workhorse_attempt_history", "workhorse_job_outcome", "workhorse_job_query"):
        conn.execute(
            f"DELETE FROM {table} h USING workhorse_job j WHERE j.id = h.job_id AND j.queue = %s",
            [queue],
        )
    conn.execute("DELETE FROM workhorse_job WHERE queue = %s", [queue])
    enqueue_noops(conn, jobs, queue)
    conn.execute("VACUUM ANALYZE workhorse_job_runtime")
    # Statistics for every table, as autovacuum keeps them on a live system:
    # the history runs start with them (the history set-up analyzes), so the
    # empty runs get them too.
    conn.execute(
        "ANALYZE workhorse_job, workhorse_job_outcome, workhorse_job_query,"
        " workhorse_job_event, workhorse_attempt_history"
    )
    # Every drain starts right after a checkpoint, so none pays for the
    # set-up's WAL (a million history rows write about a gigabyte) being
    # flushed under it, and all pay alike for first-touch page images.
    conn.execute("CHECKPOINT")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    procs = [
        start_worker(url, "--burst", "--queues", queue, "--concurrency", str(concurrency))
        for _ in range(processes)
    ]
    for proc in procs:
        proc.wait(600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wait_drained(conn, jobs, queue)
    done, seconds = drained_span(conn, queue)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return done / seconds, cpu


def startup_cpu(url: str) -> float:
    """CPU seconds of a burst worker that finds nothing (Django start-up and exit)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start_worker(url, "--burst", "--queues", "bench").wait(120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def drain_runs(
    conn, url: str, jobs: int, processes: int, runs: int = DRAIN_RUNS, queue: str = "bench"
) -> tuple[float, float, str]:
    """``runs`` drains; (median jobs/s, median CPU seconds, "min-max" of the rates).

    One drain takes about two seconds here, so single runs swing by 10-20 %
    with whatever else the machine does; the median of a few is steadier.
    """
    results = [drain(conn, url, jobs, processes, 100, queue) for _ in range(runs)]
    rates = sorted(rate for rate, _ in results)
    spread = f"runs {rates[0]:,.0f}-{rates[-1]:,.0f}" if runs > 1 else ""
    return median(rates), median([cpu for _, cpu in results]), spread


def drains(conn, url: str, jobs: int, label: str) -> float:
    base_cpu = startup_cpu(url)
    one, cpu, spread = drain_runs(conn, url, jobs, 1)
    report(
        f"drain {jobs:,} no-op jobs, 1 process ({label})",
        one,
        "jobs/s",
        f"target >= 10,000; median of {DRAIN_RUNS}, {spread}",
    )
    per_job = max(0.0, cpu - base_cpu) / jobs * 1000
    report(
        "  worker CPU per no-op job (1 process, start-up subtracted)",
        per_job,
        "ms",
        "target <= 0.1",
    )
    two, _, spread = drain_runs(conn, url, jobs, 2)
    report(
        f"drain {jobs:,} no-op jobs, 2 processes ({label})",
        two,
        "jobs/s",
        f"target >= 20,000; median of {DRAIN_RUNS}, {spread}",
    )
    for processes in (1, 2):
        rate, _, spread = drain_runs(conn, url, jobs, processes, queue="bench-async")
        report(
            f"drain {jobs:,} async no-op jobs, {processes} process{'es' * (processes > 1)}",
            rate,
            "jobs/s",
            f"as pgqueuer's peer run; median of {DRAIN_RUNS}, {spread}",
        )
    return one


def pickup(conn, url: str, samples: int = 500) -> None:
    """Enqueue-commit to handler-start latency, one job at a time to an idle worker."""
    from demo.jobs import clock

    proc = start_worker(url, "--queues", "bench-latency", "--concurrency", "1", POLL_INTERVAL=60)
    try:
        time.sleep(4)  # start-up
        clock.enqueue()
        time.sleep(0.5)
        committed: dict[int, float] = {}
        for _ in range(samples):
            handle = clock.enqueue()
            committed[handle.id] = time.time()
            # Wait for this job to finish so that every pickup meets an idle
            # worker, as the measurement intends (no backlog).
            deadline = time.monotonic() + 10
            while (
                time.monotonic() < deadline
                and not conn.execute(
                    "SELECT 1 FROM workhorse_job_outcome WHERE job_id = %s", [handle.id]
                ).fetchone()
            ):
                time.sleep(0.005)
            time.sleep(0.005)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = conn.execute(
                "SELECT count(*) FROM workhorse_job_outcome WHERE job_id = ANY(%s)",
                [list(committed)],
            ).fetchone()[0]
            if done == samples:
                break
            time.sleep(0.1)
        rows = conn.execute(
            "SELECT job_id, result::text FROM workhorse_job_outcome WHERE job_id = ANY(%s)",
            [list(committed)],
        ).fetchall()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    latencies = [(float(json.loads(r)) - committed[i]) * 1000 for i, r in rows]
    for pct in (50, 95, 99):
        report(
            f"pickup latency p{pct} (enqueue commit -> handler start)",
            percentile(latencies, pct),
            "ms",
            {50: "target <= 1.5", 99: "target <= 3"}.get(pct, ""),
        )


def recovery(conn, url: str, lease: float | None, stalled: float | None, label: str) -> None:
    from demo.jobs import hang_first_run

    settings = {}
    if lease:
        settings = {"LOCK_DURATION": lease, "STALLED_INTERVAL": stalled}
    marker = Path(tempfile.gettempdir()) / f"workhorse-bench-recovery-{os.getpid()}-{label}"
    marker.unlink(missing_ok=True)
    victim = start_worker(url, "--queues", "bench-recovery", **settings)
    rescuer = None
    try:
        handle = hang_first_run.enqueue(marker=str(marker))
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        rescuer = start_worker(url, "--queues", "bench-recovery", **settings)
        time.sleep(4)  # the rescuer is up and idle
        killed = time.time()
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        deadline = time.monotonic() + 180
        finished = None
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT extract(epoch FROM finished_at) FROM workhorse_job_outcome"
                " WHERE job_id = %s",
                [handle.id],
            ).fetchone()
            if row:
                finished = float(row[0])
                break
            time.sleep(0.05)
        if finished is None:
            report(f"SIGKILL -> recovered job finished ({label})", float("nan"), "s", "TIMED OUT")
        else:
            report(f"SIGKILL -> recovered job finished ({label})", finished - killed, "s")
    finally:
        marker.unlink(missing_ok=True)
        for proc in (victim, rescuer):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(40)


RATIO_RUNS = 7
HISTORY_DB = "workhorse_bench_history"


def history_database(conn, url: str):
    """A second benchmark database on the same server, created and migrated
    afresh; (its URL, an autocommit connection to it)."""
    import psycopg

    history_url = url.rsplit("/", 1)[0] + "/" + HISTORY_DB
    conn.execute(f'DROP DATABASE IF EXISTS "{HISTORY_DB}" WITH (FORCE)')
    conn.execute(f'CREATE DATABASE "{HISTORY_DB}"')
    subprocess.run(
        [sys.executable, MANAGE, "migrate", "-v", "0", "--skip-checks"],
        env=worker_env(history_url),
        check=True,
    )
    return history_url, psycopg.connect(history_url, autocommit=True)


def history_ratio(conn, url: str, history: int, jobs: int) -> None:
    """The 1-process drain with ``history`` terminal jobs against the same
    drain on empty tables, taken in turns.

    The history lives in a second database on the same server, so that the
    empty and the history drains can alternate (empty first in one pair,
    history first in the next): on a shared machine the rate of a drain
    swings by 20 % and more from one minute to the next, and a ratio of runs
    minutes apart measures that swing more than the history. One drain of
    each, unmeasured, goes first: the first drain after the history's
    set-up (a gigabyte of WAL) pays for it.
    """
    reset(conn)
    history_url, history_conn = history_database(conn, url)
    try:
        print(f"  (putting {history:,} terminal jobs in history...)", flush=True)
        fabricate_history(history_conn, history)
        drain(conn, url, jobs, 1, 100)
        drain(history_conn, history_url, jobs, 1, 100)
        empty, full = [], []
        for run in range(RATIO_RUNS):
            sides = [(empty, conn, url), (full, history_conn, history_url)]
            for rates, side_conn, side_url in sides if run % 2 == 0 else sides[::-1]:
                rates.append(drain(side_conn, side_url, jobs, 1, 100)[0])
    finally:
        history_conn.close()
        conn.execute(f'DROP DATABASE IF EXISTS "{HISTORY_DB}" WITH (FORCE)')
    report(
        f"drain {jobs:,} no-op jobs, 1 process, {history:,} in history",
        median(full),
        "jobs/s",
        f"median of {RATIO_RUNS}, runs {min(full):,.0f}-{max(full):,.0f}",
    )
    report(
        "  the same drain on empty tables, in turns with it",
        median(empty),
        "jobs/s",
        f"median of {RATIO_RUNS}, runs {min(empty):,.0f}-{max(empty):,.0f}",
    )
    pairs = sorted(f / e for f, e in zip(full, empty, strict=True))
    report(
        "  ratio to the empty-history drain",
        median(full) / median(empty),
        "x",
        f"target >= 0.95 (of the medians; pair by pair {pairs[0]:.2f}-{pairs[-1]:.2f})",
    )


def run(conn, url: str, history: int, jobs: int = 20_000) -> None:
    section("runworker (issue: runworker)")
    reset(conn)
    drains(conn, url, jobs, "empty history")
    pickup(conn, url)
    recovery(conn, url, 2.0, 0.5, "LOCK_DURATION 2 s, STALLED_INTERVAL 0.5 s")
    recovery(conn, url, None, None, "defaults: 30 s lease, 30 s sweep")
    history_ratio(conn, url, history, jobs)
