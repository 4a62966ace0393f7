"""The public enqueue of this tree against an earlier commit's, in fine turns.

``python -m bench.enqueue_against COMMIT [--turns 30] [--singles 200]
[--batches 2]`` extracts COMMIT with ``git archive`` into a temporary
directory (the repository is not touched) and starts one process per tree,
each on a database of its own (``<bench db>_this`` and ``<bench db>_that``,
created afresh and migrated by that tree's code). Each turn asks both, in an
order that swaps every turn, for ``--singles`` single ``noop.enqueue()`` calls
(autocommit) and ``--batches`` ``enqueue_many`` calls of 1,000, and this
tree's process for as many bare one-row INSERT commits. Both run with this
venv's packages and ``DEBUG`` off.

Each turn lasts about a tenth of a second to a second, so the two sides of a
turn meet the same load; on a shared machine the rate of one side swings by
half from one second to the next, and the figures that compare the code are
the medians of the per-turn ratios, printed with their quartiles. The line
for each side also gives its client CPU per job (``time.process_time``).
Printed once with ``synchronous_commit`` off (the CPU cost) and once on.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import BENCH_DB, ROOT, report, section

PAYLOADS = [{} for _ in range(1000)]


def child(tree: str, database: str) -> None:
    """One side: this process runs ``tree``'s code; commands come on stdin."""
    sys.path[:0] = [tree, os.path.join(tree, "testproject")]
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/workhorse")
    os.environ["DATABASE_URL"] = base.rsplit("/", 1)[0] + "/" + database
    os.environ["DJANGO_SETTINGS_MODULE"] = "testproject.settings"
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    import django_workhorse

    if not django_workhorse.__file__ or not django_workhorse.__file__.startswith(tree):
        raise RuntimeError(f"{tree}: imported django_workhorse from {django_workhorse.__file__}")
    call_command("migrate", verbosity=0)
    from demo.jobs import noop

    settings.DEBUG = False
    connection.ensure_connection()
    raw = connection.connection
    raw.execute("CREATE TABLE IF NOT EXISTS bench_bare (id bigserial PRIMARY KEY, payload jsonb)")
    print("ready", flush=True)
    for line in sys.stdin:
        what, count_text, flush = line.split()
        count = int(count_text)
        raw.execute(f"SET synchronous_commit = {flush}")
        jobs = count * (1000 if what == "bulk" else 1)
        cpu, start = time.process_time(), time.perf_counter()
        for _ in range(count):
            if what == "single":
                noop.enqueue()
            elif what == "bulk":
                noop.enqueue_many(PAYLOADS)
            else:
                raw.execute("INSERT INTO bench_bare (payload) VALUES ('{}')")
        seconds = time.perf_counter() - start
        cpu_us = (time.process_time() - cpu) / jobs * 1e6
        if what == "bulk":  # start each turn's batches from the same table sizes
            raw.execute("TRUNCATE workhorse_job, workhorse_job_runtime, workhorse_job_query")
        print(json.dumps({"rate": jobs / seconds, "cpu_us": cpu_us}), flush=True)


class Side:
    def __init__(self, tree: Path, database: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.enqueue_against", "--child", str(tree), database],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        if self.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the side of {tree} did not start")

    def ask(self, what: str, count: int, flush: str) -> dict[str, Any]:
        self.stdin.write(f"{what} {count} {flush}\n")
        self.stdin.flush()
        return json.loads(self.stdout.readline())

    def close(self) -> None:
        self.stdin.close()
        self.proc.wait(60)


def quartiles(values: list[float]) -> str:
    low, mid, high = statistics.quantiles(values, n=4)
    return f"median {mid:.2f}, quartiles {low:.2f}-{high:.2f}"


def run(commit: str, turns: int, singles: int, batches: int) -> None:
    import psycopg

    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/workhorse")
    admin = psycopg.connect(base.rsplit("/", 1)[0] + "/postgres", autocommit=True)
    tmp = Path(tempfile.mkdtemp(prefix="workhorse-enqueue-against-"))
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
    sides: dict[str, Side] = {}
    try:
        for label, tree in (("this", ROOT), ("that", tmp)):
            database = f"{BENCH_DB}_{label}"
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{database}"')
            sides[label] = Side(tree, database)
        for flush in ("off", "on"):
            section(f"enqueue: this tree against {commit}, synchronous_commit {flush}")
            for side in sides.values():
                side.ask("single", 100, flush)  # warm up: plans cached, pages in memory
            rates: dict[str, list[float]] = {}
            cpus: dict[str, list[float]] = {}
            for turn in range(turns):
                order = ("this", "that") if turn % 2 == 0 else ("that", "this")
                asks = [("bare", "this", "bare", singles)]
                asks += [(label, label, "single", singles) for label in order]
                if batches:
                    asks += [(f"{label} bulk", label, "bulk", batches) for label in order]
                for key, label, what, count in asks:
                    result = sides[label].ask(what, count, flush)
                    rates.setdefault(key, []).append(result["rate"])
                    cpus.setdefault(key, []).append(result["cpu_us"])
            for key, values in rates.items():
                report(
                    f"{key}: {'batches of 1,000' if 'bulk' in key else 'one per transaction'}",
                    statistics.median(values),
                    "jobs/s",
                    f"client CPU {statistics.median(cpus[key]):.1f} us/job",
                )
            pairs = [("this", "that"), ("this", "bare"), ("that", "bare")]
            if batches:
                pairs.append(("this bulk", "that bulk"))
            for a, b in pairs:
                ratios = [x / y for x, y in zip(rates[a], rates[b], strict=True)]
                print(f"  {a} / {b}, per turn: {quartiles(ratios)}", flush=True)
    finally:
        for side in sides.values():
            side.close()
        shutil.rmtree(tmp, ignore_errors=True)
        for label in sides:
            admin.execute(f'DROP DATABASE IF EXISTS "{BENCH_DB}_{label}" WITH (FORCE)')


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(prog="python -m bench.enqueue_against")
    parser.add_argument("commit")
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--singles", type=int, default=200)
    parser.add_argument("--batches", type=int, default=2)
    args = parser.parse_args()
    run(args.commit, args.turns, args.singles, args.batches)


if __name__ == "__main__":
    main()
