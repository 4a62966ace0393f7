"""What an idle fleet costs the primary: transactions and server CPU per second.

    python -m bench idle [--idle-workers 24] [--idle-seconds 60] [--idle-settle 20]
                         [--idle-queues default] [--idle-baseline 20]

On a PostgreSQL server of its own (the embedded one of
scripts/with_database.py, started afresh and restarted once with
``pg_stat_statements`` loaded, so that its processes' CPU is this
section's alone), the server is first measured with no worker for
``--idle-baseline`` seconds (its background processes: what it costs
whatever the fleet). Then ``--idle-workers`` plain
``runworker --queues <--idle-queues> --id idle-NN`` processes start with the
default settings (``WORKHORSE`` empty: no setting of the benchmark's) and
no jobs, connected directly to the server. They serve one queue,
``default``, unless ``--idle-queues`` names others (comma-separated; a
worker without ``--queues`` would serve every queue the test project
registers, some forty, one LISTEN and one slot each). The database is
vacuumed and analyzed after ``migrate``, so that autovacuum does not
analyze the new tables during the window. Once each worker has described
itself in ``workhorse_worker`` (its first heartbeat), the section lets
them settle for ``--idle-settle`` seconds (their start-up statements are
over by then), then measures a window of ``--idle-seconds``, every read
made from a connection to another database (``postgres``), so that none
is a transaction of the workers' database:

- transactions per second of the workers' database: ``xact_commit +
  xact_rollback`` of ``pg_stat_database`` at both ends;
- what sends them: the calls of each top-level statement in the window
  (``pg_stat_statements``; each is its own transaction on the workers'
  autocommit connections), by the ``workhorse_*`` function it calls, per
  second and per worker, beside the rate the defaults of
  ``django_workhorse/conf.py`` give it (``expected()``: which code calls
  it, on which connection, every how many seconds), their mean execution
  time, and the transactions no client statement explains (autovacuum).
  ``pg_stat_user_functions`` with ``track_functions`` cannot do this: it
  misses the SQL functions the planner inlines
  (``workhorse_schedule_due_v1``, ``workhorse_vacuum_due_v1``);
- server CPU per second (``/proc/<pid>/schedstat``, nanoseconds): of the
  workers' own backends (their pids from ``pg_stat_activity``, by
  ``application_name``: ``workhorse-worker``, the claim connection;
  ``workhorse-heartbeat``, the lease connection; ``workhorse-listener``,
  LISTEN), and of every process of the server (the postmaster, its live
  children, and the children reaped in the window from its ``cutime +
  cstime``) less the server with no worker: what the fleet adds.

It prints the figures per worker and their extrapolation to 1,000 idle
workers against the targets of issue 33: at most ``TX_TARGET``
transactions/s and ``CPU_TARGET`` of a core per 1,000 idle workers (the
CPU verdict on what the fleet adds to every server process, which is at
least its backends' own). Transaction counts reach ``pg_stat_database``
up to a few seconds after they commit (each backend flushes its counts
when it goes idle, at most once a second), so a window's ends blur by
that much; a longer window blurs less. ``pg_stat_statements`` counts at
once.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

from .common import ROOT, report, section
from .fleet import _load, wait_ready
from .worker import MANAGE, worker_env

DATABASE = "workhorse_idle"
TX_TARGET = 300.0
"""Transactions per second per 1,000 idle workers, at most (issue 33)."""
CPU_TARGET = 0.25
"""Cores of the primary per 1,000 idle workers, at most (issue 33)."""
PER = 1000
TICKS = os.sysconf("SC_CLK_TCK")


def expected() -> dict[str, tuple[str, str, float | None]]:
    """For each function an idle worker calls: the code that calls it, the
    setting that times it, and the calls per second per worker that the
    defaults give (None: not every turn, or off)."""
    from django_workhorse.conf import DEFAULTS, LISTENING_POLL_INTERVAL, RETENTION_DEFAULTS

    from django_workhorse.worker.heartbeat import PARTITION_SWEEP_INTERVAL
    from django_workhorse.worker.presence import describe_every

    lock = float(DEFAULTS["LOCK_DURATION"])
    renew = DEFAULTS["LOCK_RENEW_INTERVAL"] or lock / 2
    # Idle workers whose LISTEN works: None is the listening default.
    poll = float(DEFAULTS["POLL_INTERVAL"] or LISTENING_POLL_INTERVAL)
    described = describe_every(0, renew)
    metrics = DEFAULTS["QUEUE_METRICS_INTERVAL"]
    return {
        "workhorse_claim_many_v1": (
            "worker/worker.py:Worker._pass -> _claim (claim connection)",
            f"POLL_INTERVAL {poll:g} s (the idle wait's timer)",
            1 / poll,
        ),
        "workhorse_next_run_at_v1": (
            "worker/worker.py:Worker._idle_timeout (claim connection), after each empty claim",
            f"POLL_INTERVAL {poll:g} s",
            1 / poll,
        ),
        "workhorse_heartbeat_many_v1": (
            "worker/heartbeat.py:Heartbeat.renew, the worker's description alone while idle"
            " (lease connection)",
            f"worker/presence.py:describe_every, idle: {described:g} s",
            1 / described,
        ),
        "workhorse_pulse_v1": (
            "worker/wakeups.py:Listener._pulse, the liveness proof (LISTEN connection)",
            f"LOCK_DURATION / 2 = {lock / 2:g} s",
            2 / lock,
        ),
        "workhorse_recover_stalled_v1": (
            "worker/heartbeat.py:Heartbeat.recover, the stall sweep (lease connection):"
            " the fleet's leader only",
            f"STALLED_INTERVAL {DEFAULTS['STALLED_INTERVAL']:g} s, one worker",
            None,
        ),
        "workhorse_schedule_due_v1": (
            "worker/scheduler.py:ScheduleSweeper.tick -> sweep (claim connection):"
            " the fleet's leader only",
            f"SCHEDULE_SWEEP_INTERVAL {DEFAULTS['SCHEDULE_SWEEP_INTERVAL']:g} s, one worker",
            None,
        ),
        "workhorse_vacuum_due_v1": (
            "worker/vacuum.py:VacuumSweeper.tick (claim connection): the fleet's leader only",
            f"VACUUM_INTERVAL {DEFAULTS['VACUUM_INTERVAL']:g} s, one worker",
            None,
        ),
        "workhorse_prune_v1": (
            "worker/retention.py:RetentionSweeper.tick -> retention.prune, a call per step"
            " (claim connection)",
            f"RETENTION['INTERVAL'] {RETENTION_DEFAULTS['INTERVAL']:g} s",
            None,
        ),
        "workhorse_ensure_partitions_v1": (
            "worker/heartbeat.py:Heartbeat.run (lease connection)",
            f"PARTITION_SWEEP_INTERVAL {PARTITION_SWEEP_INTERVAL:g} s (a constant)",
            1 / PARTITION_SWEEP_INTERVAL,
        ),
        "workhorse_queue_depth_v1": (
            "worker/sidecars.py:DepthSampler.tick (claim connection)",
            f"QUEUE_METRICS_INTERVAL {metrics} (off by default)",
            None if metrics is None else 1 / float(metrics),
        ),
    }


FUNCTION = re.compile(r"\bworkhorse_\w+_v\d+\b")


def load_statements(server) -> None:
    """Restart the server with pg_stat_statements loaded, and create its view
    in the ``postgres`` database (it shows every database's statements, so
    the section reads it from there, outside the workers' database)."""
    with psycopg.connect(server_url(server), autocommit=True) as admin:
        admin.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
    log = str(server.base / "server.log")
    server.pg.pg_ctl(
        ["-w", "-t", "60", "-l", log, "-o", f"-p {server.port}", "restart"],
        pgdata=server.base / "data",
        **server._run_as(),
    )
    with psycopg.connect(server_url(server), autocommit=True) as admin:
        admin.execute("CREATE EXTENSION pg_stat_statements")


def server_url(server) -> str:
    return f"postgres://postgres@127.0.0.1:{server.port}/postgres"


def statement_calls(other: psycopg.Connection) -> dict[str, tuple[int, float]]:
    """Calls and execution time (ms) of each top-level statement run in the
    workers' database so far, by the ``workhorse_*`` function it calls (or
    its text when it calls none)."""
    found: dict[str, tuple[int, float]] = {}
    for query, calls, ms in other.execute(
        "SELECT s.query, s.calls, s.total_exec_time FROM pg_stat_statements s"
        " JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s AND s.toplevel",
        [DATABASE],
    ).fetchall():
        match = FUNCTION.search(query)
        key = match.group(0) if match else " ".join(query.split())[:60]
        n, total = found.get(key, (0, 0.0))
        found[key] = (n + int(calls), total + float(ms))
    return found


def transactions(other: psycopg.Connection) -> int:
    """Committed and rolled back transactions of the workers' database, read
    from a connection to another database (so the read is not one of them)."""
    (count,) = other.execute(
        "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
        [DATABASE],
    ).fetchone()
    return int(count)


def backends(other: psycopg.Connection) -> dict[int, str]:
    """The workers' backends: pid -> role (``workhorse-worker``, the claim
    connection; ``workhorse-heartbeat``, the lease connection;
    ``workhorse-listener``)."""
    return {
        pid: name.split(" ", 1)[0]
        for pid, name in other.execute(
            "SELECT pid, application_name FROM pg_stat_activity"
            " WHERE datname = %s AND application_name LIKE 'workhorse-%%'",
            [DATABASE],
        ).fetchall()
    }


def cpu_seconds(pid: int) -> float | None:
    """CPU time a live process has run, to the nanosecond (``/proc/<pid>/schedstat``:
    ``/proc/<pid>/stat`` counts clock ticks of 10 ms, and an idle backend
    uses a few of them a minute); None once it is gone."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def server_cpu(postmaster: int) -> float:
    """CPU of every process of the server: each live one's (the postmaster
    and its children, from schedstat) and the reaped children's (backends
    and autovacuum workers that exited: the postmaster's cutime + cstime,
    in clock ticks)."""
    stat = Path(f"/proc/{postmaster}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    total = (int(fields[13]) + int(fields[14])) / TICKS + (cpu_seconds(postmaster) or 0.0)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == postmaster:
            continue
        try:
            child = (entry / "stat").read_text()
        except OSError:
            continue
        if int(child[child.rindex(")") + 2 :].split()[1]) == postmaster:
            total += cpu_seconds(int(entry.name)) or 0.0
    return total


def start_idle(url: str, workers: int, queues: str, logs: Path) -> list[subprocess.Popen]:
    """``workers`` runworker processes serving ``queues``, default settings,
    their own ids."""
    env = worker_env(url)
    env.pop("WORKHORSE_JSON", None)  # WORKHORSE = {}: every default
    fleet = []
    for i in range(workers):
        with (logs / f"idle-{i}.log").open("wb") as log:
            fleet.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        MANAGE,
                        "runworker",
                        "--queues",
                        queues,
                        "--id",
                        f"idle-{i:02d}",
                    ],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    start_new_session=True,
                )
            )
    return fleet


def measure(
    url: str,
    base: str,
    postmaster: int,
    workers: int,
    queues: str,
    seconds: float,
    settle: float,
    baseline: float,
) -> dict:
    logs = Path(tempfile.mkdtemp(prefix="workhorse-idle-"))
    own = psycopg.connect(url, autocommit=True, application_name="idle-bench")
    # Every read of the window is made here, in another database: none of
    # them is a transaction or a statement of the workers' database.
    other = psycopg.connect(base, dbname="postgres", autocommit=True)
    # The server with no worker: its background processes (WAL writer,
    # checkpointer, autovacuum launcher, I/O workers) cost the same whether
    # 6 or 1,000 workers run; the fleet's cost is what it adds to this.
    quiet_tx, quiet_cpu = transactions(other), server_cpu(postmaster)
    started = time.monotonic()
    time.sleep(baseline)
    quiet_seconds = time.monotonic() - started
    quiet_tx, quiet_cpu = transactions(other) - quiet_tx, server_cpu(postmaster) - quiet_cpu
    fleet = start_idle(url, workers, queues, logs)
    try:
        wait_ready(fleet, logs, own, prefix="idle-")
        time.sleep(settle)
        pids = backends(other)
        calls_before = statement_calls(other)
        tx_before = transactions(other)
        server_before = server_cpu(postmaster)
        cpu_before = {pid: cpu_seconds(pid) for pid in pids}
        started = time.monotonic()
        time.sleep(seconds)
        tx_after = transactions(other)
        server_after = server_cpu(postmaster)
        cpu_after = {pid: cpu_seconds(pid) for pid in pids}
        window = time.monotonic() - started
        calls_after = statement_calls(other)
        pids_after = backends(other)
    finally:
        for proc in fleet:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in fleet:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        own.close()
        other.close()
    shutil.rmtree(logs, ignore_errors=True)
    by_role: dict[str, float] = {}
    for pid, role in pids.items():
        before, after = cpu_before.get(pid), cpu_after.get(pid)
        if before is not None and after is not None:
            by_role[role] = by_role.get(role, 0.0) + after - before
    calls = {
        name: (n - calls_before.get(name, (0, 0.0))[0], ms - calls_before.get(name, (0, 0.0))[1])
        for name, (n, ms) in calls_after.items()
        if n - calls_before.get(name, (0, 0.0))[0] > 0
    }
    return {
        "workers": workers,
        "queues": queues,
        "window": window,
        "transactions": tx_after - tx_before,
        "calls": calls,
        "server_cpu": server_after - server_before,
        "baseline": quiet_seconds,
        "baseline_tx": quiet_tx,
        "baseline_cpu": quiet_cpu,
        "backend_cpu": by_role,
        "backends": len(pids),
        "backends_changed": set(pids) != set(pids_after),
    }


def print_figures(f: dict) -> None:
    n, window = f["workers"], f["window"]
    section(
        f"idle fleet: {n} runworker --queues {f['queues']} processes, default settings,"
        f" no jobs, direct connections; a window of {window:.1f} s"
    )
    tx = f["transactions"] / window
    report("transactions/s, the database (pg_stat_database)", tx, "tx/s")
    report("transactions/s per idle worker", tx / n, "tx/s")
    backend = sum(f["backend_cpu"].values()) / window
    server = f["server_cpu"] / window
    report(f"server CPU, the workers' {f['backends']} backends", backend * 1000, "ms/s")
    for role, seconds in sorted(f["backend_cpu"].items()):
        report(f"  of which {role} connections", seconds / window * 1000, "ms/s")
    report("server CPU, every server process", server * 1000, "ms/s")
    quiet = f["baseline_cpu"] / f["baseline"] if f["baseline"] else 0.0
    if f["baseline"]:
        report(
            f"  the server with no worker ({f['baseline']:.0f} s before they started)",
            quiet * 1000,
            "ms/s",
            f"{f['baseline_tx'] / f['baseline']:.2f} tx/s",
        )
    added = server - quiet
    report("server CPU the fleet adds (every process less no worker)", added * 1000, "ms/s")
    report("server CPU per idle worker, its backends", backend / n * 1e6, "us/s")
    report("server CPU per idle worker, what the fleet adds", added / n * 1e6, "us/s")
    if f["backends_changed"]:
        print("  (the workers' backends changed during the window: a reconnect)", flush=True)

    print(
        f"\n  statements in the window by the function they call (pg_stat_statements),"
        f" per second per worker, against the rate the defaults give:\n"
        f"  {'function':<34} {'calls':>6} {'/s/worker':>10} {'expected':>9} {'exec us':>8}"
        f" {'exec us/s/worker':>17}  code; setting",
        flush=True,
    )
    known = expected()
    explained = 0
    for name, (count, self_ms) in sorted(f["calls"].items(), key=lambda kv: -kv[1][0]):
        code, setting, rate = known.get(name, ("(not a periodic call of the worker)", "", None))
        if name in known:
            explained += count
        print(
            f"  {name:<34} {count:>6} {count / window / n:>10.4f}"
            f" {'-' if rate is None else f'{rate:.4f}':>9} {self_ms * 1000 / count:>8.0f}"
            f" {self_ms * 1000 / window / n:>17.1f}  {code}; {setting}",
            flush=True,
        )
    for name, (code, setting, rate) in known.items():
        if name not in f["calls"]:
            print(
                f"  {name:<34} {0:>6} {0:>10.4f} {'-' if rate is None else f'{rate:.4f}':>9}"
                f" {'':>8} {'':>17}  {code}; {setting}",
                flush=True,
            )
    statements = sum(count for count, _ in f["calls"].values())
    rest = f["transactions"] - statements
    print(
        f"  transactions in the window {f['transactions']}; client statements {statements},"
        f" {explained} of them the worker's periodic calls above; the difference, {rest}"
        f" ({rest / window:.2f}/s), is autovacuum's and the blur of the statistics' flush at"
        " the window's ends. (exec us: the statement's mean execution time, wall clock,"
        " as pg_stat_statements times it)",
        flush=True,
    )

    per_tx = tx / n * PER
    per_cpu = added / n * PER
    per_backend = backend / n * PER
    section(f"idle fleet: {PER:,} idle workers, extrapolated from {n}")
    report(
        f"transactions/s per {PER:,} idle workers",
        per_tx,
        "tx/s",
        f"target <= {TX_TARGET:g} -> {'OK' if per_tx <= TX_TARGET else 'ABOVE'}",
    )
    report(
        f"server cores per {PER:,} idle workers, what the fleet adds",
        per_cpu,
        "cores",
        f"target <= {CPU_TARGET:g} -> {'OK' if per_cpu <= CPU_TARGET else 'ABOVE'}",
    )
    report(f"server cores per {PER:,} idle workers, their backends only", per_backend, "cores")


def run(
    workers: int, seconds: float, settle: float, queues: str = "default", baseline: float = 20.0
) -> dict:
    embedded = _load("workhorse_with_database", ROOT / "scripts" / "with_database.py")
    server = embedded.EmbeddedServer()
    base = server.start()
    url = base.rsplit("/", 1)[0] + "/" + DATABASE
    try:
        load_statements(server)
        with psycopg.connect(base, dbname="postgres", autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {DATABASE}")
            version = admin.execute("SHOW server_version").fetchone()[0]
        subprocess.run(
            [sys.executable, MANAGE, "migrate", "--verbosity", "0"],
            env=worker_env(url),
            check=True,
            capture_output=True,
        )
        with psycopg.connect(url, autocommit=True) as conn:
            # Statistics for the tables migrate made: else autovacuum
            # analyzes them in the window, tens of transactions at once.
            conn.execute("VACUUM ANALYZE")
        print(
            f"\nidle server: embedded PostgreSQL {version} at 127.0.0.1:{server.port}", flush=True
        )
        postmaster = int((server.base / "data" / "postmaster.pid").read_text().split()[0])
        figures = measure(url, base, postmaster, workers, queues, seconds, settle, baseline)
        print_figures(figures)
        return figures
    finally:
        server.stop()
