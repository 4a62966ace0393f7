"""Peer comparison: pgqueuer drains the same no-op jobs on the same machine and server.

A figure of ours means more beside another Postgres queue measured the same
way, here and now, than beside numbers quoted from elsewhere. pgqueuer is not a
dependency of the project: it lives in ``.bench-venv`` (git-ignored), which this
module creates on first use from bench/peers-constraints.txt and rebuilds when
that file changes. Nothing here imports it; bench/peer_pgqueuer.py runs under
that venv's Python as separate processes, and prints JSON lines read here.

pgqueuer gets a database of its own, ours with ``_peer`` appended
(``workhorse_bench_peer`` unless WORKHORSE_BENCH_DB names another), dropped and
created every run like ours, on the server of DATABASE_URL, with the server's
fsync and synchronous_commit as they are.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from .common import BENCH_DB, ROOT, median, percentile, report, section
from .common import reset as common_reset

if TYPE_CHECKING:
    import psycopg

PEER_DB = f"{BENCH_DB}_peer"
"""Beside our benchmark database, so that two runs on one server with databases
of their own never drop each other's."""
VENV = ROOT / ".bench-venv"
PYTHON = VENV / "bin" / "python"
CONSTRAINTS = ROOT / "bench" / "peers-constraints.txt"
# Written last: an interrupted install has none and is redone.
STAMP = VENV / ".installed"
PACKAGES = ("pgqueuer", "asyncpg")
SCRIPT = ROOT / "bench" / "peer_pgqueuer.py"
JOBS = 20_000
DRAIN_RUNS = 3
PICKUP_SAMPLES = 300
SINGLE = 1_000
SINGLE_TURNS = 30
SINGLE_PER_TURN = 200
BARE_INSERT = "INSERT INTO bench_bare (payload) VALUES ('{}')"


def _wanted_stamp() -> str:
    return hashlib.sha256(CONSTRAINTS.read_bytes() + " ".join(PACKAGES).encode()).hexdigest()


def _python_runs() -> bool:
    try:
        return subprocess.run([PYTHON, "-c", ""], capture_output=True, timeout=60).returncode == 0
    except OSError:
        return False


def ensure_venv() -> None:
    """Create ``.bench-venv`` unless it holds exactly what the constraints file pins.

    A changed pin rebuilds it from scratch rather than upgrading in place, so
    that the venv never holds leftovers the file no longer names.
    """
    wanted = _wanted_stamp()
    if STAMP.is_file() and STAMP.read_text().strip() == wanted and _python_runs():
        return
    print(f"creating {VENV.name} for the peer benchmark (not a project dependency)", flush=True)
    shutil.rmtree(VENV, ignore_errors=True)
    # The bench's own interpreter is the project's Python (>= 3.12); venv
    # builds on its base installation, not on the project venv.
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = subprocess.run(
        [PYTHON, "-m", "pip", "install", "--quiet", "-c", str(CONSTRAINTS), *PACKAGES],
        capture_output=True,
        text=True,
    )
    if pip.returncode != 0:
        sys.stderr.write(pip.stdout + pip.stderr)
        raise RuntimeError(f"installing {' '.join(PACKAGES)} into {VENV} failed")
    STAMP.write_text(wanted + "\n")


def peer_url(url: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path="/" + PEER_DB))


def create_database(conn: psycopg.Connection) -> None:
    # Afresh every run, like workhorse_bench, so no earlier run's schema or
    # rows are measured.
    conn.execute(f'DROP DATABASE IF EXISTS "{PEER_DB}" WITH (FORCE)')
    conn.execute(f'CREATE DATABASE "{PEER_DB}"')


def _last_json(stdout: str) -> dict[str, Any]:
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"no JSON result in the peer's output: {stdout[-2000:]!r}")
    return json.loads(lines[-1])


def peer(env: dict[str, str], *args: str, timeout: float = 600) -> dict[str, Any]:
    """Run one subcommand of the peer script to completion; its JSON result."""
    done = subprocess.run(
        [PYTHON, str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise RuntimeError(f"peer_pgqueuer.py {' '.join(args)} exited {done.returncode}")
    return _last_json(done.stdout)


class Worker:
    """A pgqueuer worker process; its stderr kept in a file to show if it fails."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.args = args
        self.log = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed by finish or stop)
        self.proc = subprocess.Popen(
            [PYTHON, str(SCRIPT), "worker", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )

    def finish(self, timeout: float, terminate: bool) -> dict[str, Any]:
        """Wait for the exit (after SIGTERM if ``terminate``); its JSON result."""
        if terminate:
            self.proc.send_signal(signal.SIGTERM)
        try:
            stdout, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()
            raise
        finally:
            self.log.seek(0)
            errors = self.log.read()
            self.log.close()
        if self.proc.returncode != 0:
            sys.stderr.write(errors[-4000:])
            raise RuntimeError(f"pgqueuer worker {self.args} exited {self.proc.returncode}")
        return _last_json(stdout)

    def stop(self) -> None:
        """End the process if it still runs (after a failure elsewhere), SIGTERM first."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def drain(
    conn: psycopg.Connection, env: dict[str, str], processes: int, batch: int
) -> tuple[float, str]:
    """Drain JOBS no-op jobs with ``processes`` pgqueuer workers; (jobs/s, problem or "").

    The jobs are enqueued in bulk first, then the workers start, in drain mode
    (each exits once the queue is empty). The rate is jobs / (last finish -
    first pick) on the database clock from pgqueuer's own log, as ours is from
    its attempt history, so process start-up is excluded.
    """
    peer(env, "enqueue", str(JOBS))
    # As before ours: no drain pays for an earlier one's WAL being flushed under it.
    conn.execute("CHECKPOINT")
    workers = [Worker(env, "--batch", str(batch), "--drain") for _ in range(processes)]
    try:
        handled = sum(w.finish(600, terminate=False)["handled"] for w in workers)
    finally:
        for w in workers:
            w.stop()
    result = peer(env, "span")
    problem = ""
    if result["done"] != JOBS or result["left"] or handled != JOBS:
        problem = f"INCOMPLETE: {result['done']} logged, {handled} run, {result['left']} left"
    if result["seconds"] <= 0:
        return float("nan"), problem or "no span"
    return result["done"] / result["seconds"], problem


def drain_runs(
    conn: psycopg.Connection, env: dict[str, str], processes: int, batch: int
) -> tuple[float, str]:
    """The median of DRAIN_RUNS drains and a note with their spread (or a problem).

    A drain of 20,000 jobs lasts about a second here, so one run swings with
    whatever else the machine does, and with how far the second process's
    start-up overlaps the first one's work; ours takes the median of as many.
    """
    rates, problems = [], []
    for _ in range(DRAIN_RUNS):
        rate, problem = drain(conn, env, processes, batch)
        rates.append(rate)
        if problem:
            problems.append(problem)
    rates.sort()
    note = f"median of {DRAIN_RUNS}, runs {rates[0]:,.0f}-{rates[-1]:,.0f}"
    return median(rates), "; ".join([*problems, note])


def pickup(env: dict[str, str], batch: int) -> list[float]:
    """Latencies (ms) of PICKUP_SAMPLES single jobs, each to an idle worker."""
    peer(env, "enqueue", "0")
    with tempfile.TemporaryDirectory() as tmp:
        starts = str(Path(tmp) / "starts")
        Path(starts).touch()
        worker = Worker(env, "--batch", str(batch), "--starts", starts)
        try:
            result = peer(env, "pickup", str(PICKUP_SAMPLES), "--starts", starts)
        finally:
            worker.finish(30, terminate=True)
    if result["missing"]:
        print(f"  ({result['missing']} of {PICKUP_SAMPLES} pgqueuer pickups never started)")
    return result["latencies_ms"]


def side_by_side(conn: psycopg.Connection, url: str, env: dict[str, str]) -> None:
    """Our sync and async drains and pgqueuer's (batch 100), taken in turns.

    Each round drains 20,000 jobs with ours (sync, then async no-op) and then
    with pgqueuer, one and two processes, so that both meet the machine in
    the same minute: on a shared machine the rate of a drain swings by 20 %
    and more from one minute to the next. The ratios are of the medians.
    """
    from . import worker as ours

    for processes in (1, 2):
        rates: dict[str, list[float]] = {"sync": [], "async": [], "pgqueuer": []}
        problems: list[str] = []
        for _ in range(DRAIN_RUNS):
            rates["sync"].append(ours.drain(conn, url, JOBS, processes, 100, "bench")[0])
            rates["async"].append(ours.drain(conn, url, JOBS, processes, 100, "bench-async")[0])
            rate, problem = drain(conn, env, processes, 100)
            rates["pgqueuer"].append(rate)
            if problem:
                problems.append(problem)
        plural = "es" if processes > 1 else ""
        for name, label in (
            ("sync", "workhorse sync no-op"),
            ("async", "workhorse async no-op"),
            ("pgqueuer", "pgqueuer async no-op, batch 100"),
        ):
            runs = sorted(rates[name])
            note = f"median of {len(runs)}, runs {runs[0]:,.0f}-{runs[-1]:,.0f}"
            if name == "pgqueuer" and problems:
                note = "; ".join([*problems, note])
            report(f"{label}, {processes} process{plural}", median(runs), "jobs/s", note)
        theirs = median(rates["pgqueuer"])
        report(
            f"  workhorse / pgqueuer, {processes} process{plural}",
            median(rates["sync"]) / theirs,
            "x",
            f"sync; async {median(rates['async']) / theirs:.2f} x",
        )


def _server_cpu(pid: int | None) -> Callable[[], float | None]:
    """A reader of server process ``pid``'s CPU time so far (us), from
    ``/proc/<pid>/schedstat``: None when the server is not on this machine
    (or its processes cannot be read)."""
    path = Path(f"/proc/{pid}/schedstat")

    def read() -> float | None:
        try:
            return int(path.read_text().split()[0]) / 1e3
        except (OSError, ValueError, IndexError):
            return None

    return read


def _calls(
    call: Callable[[], object], count: int, server: Callable[[], float | None]
) -> dict[str, Any]:
    """``count`` calls: their rate, this process's CPU per call and the server
    process's (us; None when it cannot be read)."""
    before = server()
    cpu, start = time.process_time(), time.perf_counter()
    for _ in range(count):
        call()
    seconds = time.perf_counter() - start
    cpu_us = (time.process_time() - cpu) / count * 1e6
    after = server()
    backend = None if before is None or after is None else (after - before) / count
    return {"rate": count / seconds, "cpu_us": cpu_us, "server_us": backend}


def _spread(values: list[float], digits: int = 2) -> str:
    low, mid, high = statistics.quantiles(values, n=4)
    return f"median {mid:,.{digits}f}, quartiles {low:,.{digits}f} to {high:,.{digits}f}"


OURS = "workhorse noop.enqueue()"
PGQUEUER = "pgqueuer Queries.enqueue"
BARE_DJANGO = "bare one-row INSERT, Django cursor"
BARE_PSYCOPG = "bare one-row INSERT, psycopg connection"
SQL_ALONE = "floor: the enqueue's SQL alone, psycopg cursor"
THREE_ROWS = "floor: a job's three rows, one prepared statement"


def single_in_turns(
    conn: psycopg.Connection,
    env: dict[str, str],
    turns: int = SINGLE_TURNS,
    count: int = SINGLE_PER_TURN,
) -> None:
    """Our single enqueue, pgqueuer's, a bare one-row INSERT commit and two
    floors of ours, in fine turns.

    Each turn makes ``count`` calls of each, one transaction each, the order
    swapped every turn: our ``noop.enqueue()`` (autocommit, ``DEBUG`` off),
    pgqueuer's ``Queries.enqueue`` from a process that stays up between
    turns, the bare INSERT through Django's cursor and through the psycopg
    connection under it; and the floors, on that psycopg connection: the
    very text ``noop.enqueue()`` sends (the call of
    ``workhorse_enqueue_batch_v1`` with its parameters written in) on one
    kept cursor, which is the enqueue's SQL with as little Python as a client
    can spend on it, and the three rows a job starts with written by one
    prepared statement (``core.THREE_ROWS_ONE``: no function, NOTIFY or
    check). A turn takes about a second a side, so the sides meet the same
    load; the comparisons are the medians of the per-turn ratios and
    differences. Client CPU is each process's ``process_time`` per call;
    server CPU that of the side's server process (``/proc/<pid>/schedstat``,
    when the server runs on this machine).
    """
    import psycopg as driver
    from demo.jobs import noop
    from django.db import connection

    from .core import THREE_ROWS_ONE, as_in_production

    flush = conn.execute("SHOW synchronous_commit").fetchone()[0]
    section(
        f"single enqueue in turns: {turns} turns of {count} calls a side,"
        f" one transaction each, synchronous_commit {flush}"
    )
    peer_proc = subprocess.Popen(
        [PYTHON, str(SCRIPT), "singles"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert peer_proc.stdin is not None and peer_proc.stdout is not None
    stdin, stdout = peer_proc.stdin, peer_proc.stdout

    def bare_django() -> None:
        with connection.cursor() as cursor:
            cursor.execute(BARE_INSERT)

    try:
        ready = _last_json(stdout.readline())
        if not ready.get("ready"):
            raise RuntimeError("pgqueuer's single enqueue process did not start")
        peer_server = _server_cpu(ready.get("backend_pid"))

        def pgqueuer(count: int) -> dict[str, Any]:
            before = peer_server()
            stdin.write(f"{count}\n")
            stdin.flush()
            result = _last_json(stdout.readline())
            after = peer_server()
            result["server_us"] = (
                None if before is None or after is None else (after - before) / count
            )
            return result

        with as_in_production():
            connection.ensure_connection()
            raw = connection.connection
            raw.execute(
                "CREATE TABLE IF NOT EXISTS bench_bare (id bigserial PRIMARY KEY, payload jsonb)"
            )
            ours_server = _server_cpu(raw.execute("SELECT pg_backend_pid()").fetchone()[0])
            noop.enqueue()
            _options, row, _using = noop._call_options()
            assert row is not None
            with connection.cursor() as cursor:
                sent = cursor.mogrify(row.statement, row.parameters("[{}]"))
            kept = driver.Cursor(raw)  # server-side binding, so it can prepare

            def sql_alone() -> None:
                kept.execute(sent)
                kept.fetchall()

            def three_rows() -> None:
                kept.execute(THREE_ROWS_ONE, prepare=True)

            sides: dict[str, Callable[[int], dict[str, Any]]] = {
                OURS: lambda n: _calls(noop.enqueue, n, ours_server),
                PGQUEUER: pgqueuer,
                BARE_DJANGO: lambda n: _calls(bare_django, n, ours_server),
                BARE_PSYCOPG: lambda n: _calls(lambda: raw.execute(BARE_INSERT), n, ours_server),
                SQL_ALONE: lambda n: _calls(sql_alone, n, ours_server),
                THREE_ROWS: lambda n: _calls(three_rows, n, ours_server),
            }
            for side in sides.values():  # warm up: plans made, pages in memory
                side(50)
            results: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
            for turn in range(turns):
                for name in list(sides) if turn % 2 == 0 else reversed(sides):
                    results[name].append(sides[name](count))
            kept.close()
            raw.execute("DROP TABLE bench_bare")
    finally:
        stdin.close()
        peer_proc.wait(60)
    common_reset(conn)
    for name, runs in results.items():
        servers = [r["server_us"] for r in runs if r["server_us"] is not None]
        server = f", server CPU {median(servers):.1f} us/call" if servers else ""
        report(
            name,
            median([r["rate"] for r in runs]),
            "jobs/s",
            f"client CPU {median([r['cpu_us'] for r in runs]):.1f} us/call{server}",
        )
    theirs = results[PGQUEUER]
    for name, who, target in (
        (OURS, "workhorse", " (target >= 1.0)"),
        (SQL_ALONE, "the SQL alone", ""),
        (THREE_ROWS, "the three rows", ""),
    ):
        ratios = [a["rate"] / b["rate"] for a, b in zip(results[name], theirs, strict=True)]
        print(f"  {who} / pgqueuer, jobs/s per turn: {_spread(ratios)}{target}")
    for name, who, target in (
        (OURS, "workhorse", " (target <= 60)"),
        (SQL_ALONE, "the SQL alone", ""),
    ):
        for bare in (BARE_DJANGO, BARE_PSYCOPG):
            extra = [
                a["cpu_us"] - b["cpu_us"] for a, b in zip(results[name], results[bare], strict=True)
            ]
            print(
                f"  {who}: client CPU over the {bare[len('bare one-row INSERT, ') :]} INSERT,"
                f" us/call per turn: {_spread(extra, 1)}{target}",
                flush=True,
            )


def enqueues(conn: psycopg.Connection, env: dict[str, str], turns: int = 5) -> None:
    """Single and bulk enqueue, ours (public API) and pgqueuer's, in turns.

    Single: SINGLE jobs, one per transaction. Bulk: JOBS jobs in calls of
    1,000 (our ``enqueue_many``, pgqueuer's list ``enqueue``). Each side starts
    its bulk run from an empty queue.
    """
    from . import common, core

    rates: dict[str, list[float]] = {
        "ours single": [],
        "theirs single": [],
        "ours bulk": [],
        "theirs bulk": [],
        "floor single": [],
        "floor bulk": [],
    }
    for _ in range(turns):
        common.reset(conn)
        core._public_enqueues(50)  # warm up
        rates["ours single"].append(core._public_enqueues(SINGLE))
        result = peer(env, "single", str(SINGLE))
        rates["theirs single"].append(result["enqueued"] / result["seconds"])
        rates["ours bulk"].append(core.bulk_enqueues(conn, JOBS // 1000))
        result = peer(env, "enqueue", str(JOBS))
        rates["theirs bulk"].append(result["enqueued"] / result["seconds"])
        rates["floor single"].append(core.three_row_floor(conn, SINGLE))
        rates["floor bulk"].append(core.three_row_floor_bulk(conn, JOBS // 1000))
    for kind, target in (("single", 1.2), ("bulk", 1.5)):
        ours, theirs = median(rates[f"ours {kind}"]), median(rates[f"theirs {kind}"])
        what = "one job per transaction" if kind == "single" else "batches of 1,000"
        for side, rate in (("workhorse", ours), ("pgqueuer", theirs)):
            runs = sorted(rates[f"{'ours' if side == 'workhorse' else 'theirs'} {kind}"])
            report(
                f"{side} enqueue, {what}",
                rate,
                "jobs/s",
                f"median of {turns}, runs {runs[0]:,.0f}-{runs[-1]:,.0f}",
            )
        report(f"  workhorse / pgqueuer, {what}", ours / theirs, "x", f"target >= {target}")
        floor = median(rates[f"floor {kind}"])
        report(
            f"  floor (a job's three rows, one bare statement) / pgqueuer, {what}",
            floor / theirs,
            "x",
            "the most a three-row enqueue can reach",
        )


def run(
    conn: psycopg.Connection,
    url: str,
    enqueue_only: bool = False,
    single_only: bool = False,
    single_turns: int = SINGLE_TURNS,
) -> None:
    """Print pgqueuer's drain rates and pickup latency, in the format of our own lines.

    ``conn`` (autocommit, on our benchmark database) only creates pgqueuer's
    database; ``url`` is our benchmark database's URL, whose server it shares.
    ``enqueue_only`` stops after the enqueue comparisons, ``single_only``
    after the single enqueue in turns (``single_turns`` of them).
    """
    started = time.monotonic()
    ensure_venv()
    create_database(conn)
    env = dict(os.environ, PGQUEUER_DSN=peer_url(url))
    info = peer(env, "install")
    default = int(info["default_batch"])
    section(
        f"peer: pgqueuer {info['version']} ({VENV.name}, not a dependency;"
        f" database {PEER_DB}, durability {info['durability']})"
    )
    single_in_turns(conn, env, turns=single_turns)
    if single_only:
        return
    enqueues(conn, env)
    if enqueue_only:
        return
    side_by_side(conn, url, env)
    rate, note = drain_runs(conn, env, 1, default)
    report(
        f"pgqueuer drain {JOBS:,} no-op jobs, 1 process, batch {default}",
        rate,
        "jobs/s",
        note + " (pgqueuer's default)",
    )
    # Ours just before theirs, as the drains: the same minute of the machine.
    from . import worker as ours

    ours.pickup(conn, url, samples=PICKUP_SAMPLES)
    latencies = pickup(env, default)
    for pct in (50, 95, 99):
        report(
            f"pgqueuer pickup p{pct} (enqueue commit -> handler start)",
            percentile(latencies, pct),
            "ms",
            f"{len(latencies)} samples, batch {default}" if pct == 50 else "",
        )
    print(f"  (peer section took {time.monotonic() - started:.0f} s)", flush=True)
