"""The drain and the pickup of this tree against those of an earlier commit, in turns.

``python -m bench drain pickup oneslot --against COMMIT`` extracts COMMIT with
``git archive`` into a temporary directory (the repository is not touched),
migrates a second benchmark database (``<bench db>_against``) with that
tree's code, and then alternates: a drain (or a block of pickup samples)
with this tree's ``runworker`` on the benchmark database, then the same with
COMMIT's ``runworker`` on its own database, the order swapped every round.
On a shared machine one drain swings by 20 % from one minute to the next;
rounds taken in turns meet the same minute, so the medians compare the code
rather than the load. Both sides run with this venv's packages. ``oneslot``
compares ``runworker``'s defaults (one slot) the same way: drains of 5,000
jobs and each side's CPU per job, its own start-up subtracted.

Jobs are enqueued on both sides by this tree's ``enqueue_many`` call shape
(``workhorse_enqueue_many_v1``, whose JSON rows both versions accept); the
worker of each side is the one measured.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from . import worker
from .common import ROOT, median, percentile, report, reset, section

ROUNDS = 5
PICKUP_BLOCK = 100


class Side:
    """One code tree, its database, and how to start its worker."""

    def __init__(self, label: str, tree: Path, url: str, conn: psycopg.Connection) -> None:
        self.label = label
        self.tree = tree
        self.url = url
        self.conn = conn

    def env(self, **settings: object) -> dict[str, str]:
        env = worker.worker_env(self.url, **settings)
        # The tree's own package first, ahead of the venv's editable install.
        env["PYTHONPATH"] = os.pathsep.join([str(self.tree), str(self.tree / "testproject")])
        return env

    def start_worker(self, *flags: str, **settings: object) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, str(self.tree / "testproject" / "manage.py"), "runworker", *flags],
            env=self.env(**settings),
            cwd=self.tree,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )


@contextmanager
def checkout(commit: str) -> Iterator[Path]:
    """COMMIT's files in a temporary directory, removed afterwards."""
    directory = Path(tempfile.mkdtemp(prefix="workhorse-bench-against-"))
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", commit],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(directory)], input=archive, check=True)
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def migrated_side(label: str, tree: Path, conn: psycopg.Connection, url: str) -> Side:
    """A database of its own for ``tree``, created afresh and migrated by that tree."""
    name = url.rsplit("/", 1)[1] + "_against"
    side_url = url.rsplit("/", 1)[0] + "/" + name
    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    conn.execute(f'CREATE DATABASE "{name}"')
    side = Side(label, tree, side_url, psycopg.connect(side_url, autocommit=True))
    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django_workhorse, os; print(os.path.dirname(django_workhorse.__file__))",
        ],
        env=side.env(),
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if Path(where).resolve() != (tree / "django_workhorse").resolve():
        raise RuntimeError(f"the {label} side imports django_workhorse from {where}, not {tree}")
    subprocess.run(
        [sys.executable, str(tree / "testproject" / "manage.py"), "migrate", "-v", "0"],
        env=side.env(),
        cwd=tree,
        check=True,
    )
    return side


def drain_once(side: Side, jobs: int) -> tuple[float, float]:
    """One 1-process drain of ``jobs`` no-op jobs by ``side``'s worker: (jobs/s,
    the worker's user+system CPU seconds, start-up included)."""
    original = worker.start_worker
    worker.start_worker = lambda url, *flags, **settings: side.start_worker(*flags, **settings)
    try:
        return worker.drain(side.conn, side.url, jobs, 1, 100)
    finally:
        worker.start_worker = original


def one_slot_once(side: Side, jobs: int) -> tuple[float, float]:
    """One drain of ``jobs`` no-op jobs by ``side``'s worker with one slot:
    (jobs/s, the worker's CPU ms per job, the CPU of a burst worker that
    finds nothing, measured just before, subtracted)."""
    original = worker.start_worker
    worker.start_worker = lambda url, *flags, **settings: side.start_worker(*flags, **settings)
    try:
        base = worker.startup_cpu(side.url)
        rate, cpu = worker.drain(side.conn, side.url, jobs, 1, 1)
    finally:
        worker.start_worker = original
    return rate, max(0.0, cpu - base) / jobs * 1000


def enqueue_clock(conn: psycopg.Connection) -> int:
    """One ``demo.jobs.clock`` job through ``workhorse_enqueue_many_v1``, committed."""
    from demo.jobs import clock

    from django_workhorse import store

    rows_json, _ = clock._rows_json([{}])
    with conn.cursor() as cursor:
        return store.enqueue_many(cursor, rows_json)[0][0]


def pickup_block(side: Side, samples: int) -> list[float]:
    """``samples`` enqueue-commit → handler-start latencies (ms) on an idle worker."""
    proc = side.start_worker("--queues", "bench-latency", "--concurrency", "1", POLL_INTERVAL=60)
    conn = side.conn
    committed: dict[int, float] = {}
    try:
        time.sleep(4)  # start-up
        if proc.poll() is not None:
            raise RuntimeError(f"the {side.label} worker exited with {proc.returncode}")
        enqueue_clock(conn)
        time.sleep(0.5)
        for _ in range(samples):
            job_id = enqueue_clock(conn)
            committed[job_id] = time.time()
            deadline = time.monotonic() + 10
            while (
                time.monotonic() < deadline
                and not conn.execute(
                    "SELECT 1 FROM workhorse_job_outcome WHERE job_id = %s", [job_id]
                ).fetchone()
            ):
                time.sleep(0.005)
            time.sleep(0.005)
        rows = conn.execute(
            "SELECT job_id, result::text FROM workhorse_job_outcome WHERE job_id = ANY(%s)",
            [list(committed)],
        ).fetchall()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    return [(float(result) - committed[job_id]) * 1000 for job_id, result in rows]


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def run(
    conn: psycopg.Connection,
    url: str,
    commit: str,
    sections: list[str],
    jobs: int = 20_000,
    rounds: int = ROUNDS,
) -> None:
    resolved = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", commit],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    head = subprocess.run(
        ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    section(f"this tree ({head}) against {resolved}, in turns ({load()})")
    reset(conn)
    with checkout(commit) as tree:
        here = Side(f"this tree ({head})", ROOT, url, conn)
        there = migrated_side(resolved, tree, conn, url)
        sides = [here, there]
        try:
            if "drain" in sections:
                for side in sides:  # one unmeasured drain each: first-touch costs
                    drain_once(side, jobs)
                rates, cpus = in_turns(sides, rounds, lambda side: drain_once(side, jobs))
                report_sides(sides, rates, f"drain {jobs:,} no-op jobs, 1 process", "jobs/s", 0)
                per_job = {label: [c / jobs * 1000 for c in v] for label, v in cpus.items()}
                report_sides(sides, per_job, "  worker CPU per job (start-up included)", "ms", 3)
                ratio = median(rates[here.label]) / median(rates[there.label])
                pairs = sorted(
                    a / b for a, b in zip(rates[here.label], rates[there.label], strict=True)
                )
                report(
                    "  ratio of this tree's drain to the earlier one's",
                    ratio,
                    "x",
                    f"of the medians; round by round {pairs[0]:.2f}-{pairs[-1]:.2f}, "
                    f"median {median(pairs):.2f}",
                )
                report(
                    "  ratio of this tree's CPU per job to the earlier one's",
                    median(cpus[here.label]) / median(cpus[there.label]),
                    "x",
                    "of the medians (below 1: this tree spends less)",
                )
                print(f"  ({load()})", flush=True)
            if "oneslot" in sections:
                one_slot(sides, rounds)
            if "pickup" in sections:
                latencies: dict[str, list[float]] = {side.label: [] for side in sides}
                for turn in range(rounds):
                    for side in sides if turn % 2 == 0 else sides[::-1]:
                        latencies[side.label] += pickup_block(side, PICKUP_BLOCK)
                for pct in (50, 95, 99):
                    for side in sides:
                        report(
                            f"pickup p{pct}: {side.label}",
                            percentile(latencies[side.label], pct),
                            "ms",
                            f"{rounds} blocks of {PICKUP_BLOCK} in turns",
                        )
                print(f"  ({load()})", flush=True)
        finally:
            there.conn.close()
            name = there.url.rsplit("/", 1)[1]
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def in_turns(
    sides: list[Side], rounds: int, measure: Callable[[Side], tuple[float, float]]
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """``measure(side)`` gives (rate, CPU); each side's, ``rounds`` times, in
    turns whose order flips every round, so both see the same minute's noise."""
    rates: dict[str, list[float]] = {side.label: [] for side in sides}
    cpus: dict[str, list[float]] = {side.label: [] for side in sides}
    for turn in range(rounds):
        for side in sides if turn % 2 == 0 else sides[::-1]:
            rate, cpu = measure(side)
            rates[side.label].append(rate)
            cpus[side.label].append(cpu)
    return rates, cpus


def report_sides(
    sides: list[Side], values: dict[str, list[float]], label: str, unit: str, digits: int
) -> None:
    """One line per side: the median of its ``values`` and their range."""
    for side in sides:
        runs = values[side.label]
        report(
            f"{label}: {side.label}",
            median(runs),
            unit,
            f"median of {len(runs)}, runs {min(runs):,.{digits}f}-{max(runs):,.{digits}f}",
        )


def one_slot(sides: list[Side], rounds: int, jobs: int = 5_000) -> None:
    """``runworker``'s defaults (one slot) of both sides, in turns."""
    here, there = sides
    rates, cpus = in_turns(sides, rounds, lambda side: one_slot_once(side, jobs))
    report_sides(sides, rates, f"one slot, drain {jobs:,} no-op jobs", "jobs/s", 0)
    report_sides(sides, cpus, "  worker CPU per job (start-up subtracted)", "ms", 3)
    # A round whose worker spent less than its start-up (a worker that
    # could not start and left the jobs to the next round) has no ratio.
    pairs = sorted(
        a / b for a, b in zip(cpus[here.label], cpus[there.label], strict=True) if a > 0 and b > 0
    )
    spread = f"round by round {pairs[0]:.2f}-{pairs[-1]:.2f}" if pairs else "no round to compare"
    report(
        "  ratio of this tree's CPU per job to the earlier one's",
        median(cpus[here.label]) / (median(cpus[there.label]) or float("nan")),
        "x",
        f"of the medians; {spread}",
    )
    print(f"  ({load()})", flush=True)
