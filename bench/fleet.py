"""A fleet of workers as on separate machines, through PgBouncer, on one primary.

    python -m bench fleet [--processes 2,6,12,24] [--jobs 200000] [--pool 20]
                          [--fleet-concurrency 20] [--limited both|with|without]
                          [--fleet-rounds 1]

For each process count N (default 24 alone; the curve with ``--processes``)
two drains in turns: one with the limited queue ``fleet-limited`` among the
queues the whole fleet serves, one without it (``--limited both``, the
default; ``with`` or ``without`` runs one side), ``--fleet-rounds`` pairs of
them, the first of each pair alternating over the whole sequence
(``turns``), so that neither side always meets a fresher server. Each drain:
N plain ``runworker`` subprocesses, each started with ``start_new_session``
(its own process group), its own ``--id``, no supervisor between them, all
connected through one PgBouncer in transaction mode whose pool holds at most
``--pool`` server connections (scripts/pgbouncer.py), drain ``--jobs`` no-op
jobs. The server is the embedded PostgreSQL of scripts/with_database.py,
started afresh for the section, so that its processes' CPU is the
benchmark's alone.

The jobs wait in a paused queue while the fleet starts (24 Django processes
take a while on a small machine), and the drain begins when the queue is
resumed. Beside the drain: a queue with a global concurrency limit and a
rate limit (jobs that sleep 50 ms; in the drain with it only), and a probe
queue fed one job at a time
at a steady rate, whose jobs give the claim latency (from the enqueue's
commit to the first read of the job's runtime row that finds it claimed,
polled every 2 ms by the producer).
When half the jobs are done, a third of the fleet (at least one process) is
SIGKILLed, each process group; the survivors' stall recovery takes their
jobs back after the lease (2 s here). At the end the section checks that
every job has exactly one outcome, succeeded, and that no runtime row is
left; then, from ``attempt_history``, that the concurrency limit and the
rate limit held across the fleet (stalled attempts count as active until
recovered, as the limit counts them).

Printed per run (docs/benchmarks.md#fleet explains each line): jobs/s over
the whole drain and before the kill, claim latency p50/p99, the server
connections used (PgBouncer's SHOW POOLS and SHOW SERVERS, and
pg_stat_activity, maxima of samples every 0.5 s), server CPU per job in µs
(every process of the server, from /proc: the postmaster's own and reaped
children's time plus its live children's), WAL bytes per job
(pg_current_wal_lsn before and after), worker CPU per job, the outcome
check, the two limits and their verdict ("limits held"), the stalled
attempts by whether their process was killed, and "stalls of live
processes: N" (must be 0). Then the curve (a row per drain: jobs/s, claim
p50/p99, server CPU per job, live stalls, limits held) and, with both
sides, the ratio of jobs/s with the limited queue to without it per
process count (issue 33: at least ``RATIO_TARGET``).
"""

from __future__ import annotations

import importlib.util
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from .common import ROOT, median, percentile, report, section
from .worker import MANAGE, enqueue_noops, worker_env

DRAIN = "bench"
LIMITED = "fleet-limited"
PROBE = "fleet-probe"
LIMIT_CONCURRENCY = 4
LIMIT_RATE = 40
LIMIT_PERIOD = 1.0
LIMITED_JOBS = 400
LIMITED_SLEEP = 0.05
PROBE_PER_SECOND = 20
LEASE = 2.0
SETTINGS = {
    "LOCK_DURATION": LEASE,
    "LOCK_RENEW_INTERVAL": 0.5,
    "STALLED_INTERVAL": 0.5,
    # Wake-ups come on each worker's direct LISTEN connection (the alias
    # "direct", LISTEN_DATABASE): through a transaction-mode pool LISTEN
    # cannot work. The poll is the fallback only.
    "LISTEN_DATABASE": "direct",
    "POLL_INTERVAL": 1.0,
    "SHUTDOWN_GRACE": 5,
    "QUEUES": {
        LIMITED: {
            "concurrency": 2,
            "global_concurrency": LIMIT_CONCURRENCY,
            "rate": LIMIT_RATE,
            "period": LIMIT_PERIOD,
        },
        PROBE: {"concurrency": 1},
    },
}
TICKS = os.sysconf("SC_CLK_TCK")


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def process_cpu_seconds(pid: int) -> float:
    """User and system CPU a live process has used so far, all its threads."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def server_cpu_seconds(postmaster: int) -> float:
    """CPU of every process of the server: the postmaster's own and its reaped
    children's (backends that exited), plus each live child's."""

    def fields(pid: int) -> list[str]:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2 :].split()

    own = fields(postmaster)
    total = sum(int(v) for v in own[11:15])  # utime stime cutime cstime
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == postmaster:
            continue
        try:
            child = fields(int(entry.name))
        except (OSError, ValueError):
            continue
        if int(child[1]) == postmaster:
            total += int(child[11]) + int(child[12])
    return total / TICKS


@dataclass
class Samples:
    """Maxima seen by the sampler while the fleet ran."""

    pool_servers: int = 0
    servers: int = 0
    backends: int = 0
    clients: int = 0
    limited_active: int = 0
    limited_snapshots: int = 0
    limited_record: dict[float, int] = field(default_factory=dict)
    """The limited queue's record of claim starts (workhorse_queue.rate_starts
    and rate_counts: each claim's clock time and count), gathered from every
    snapshot; an entry stays at least one period, so none is missed."""
    claim_latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def sample(bouncer, url: str, own_pids: list[int], stop: threading.Event, into: Samples) -> None:
    """Every 0.5 s: PgBouncer's pools and servers, the server's client backends."""
    with psycopg.connect(url, autocommit=True, application_name="fleet-sampler") as conn:
        own_pids.append(conn.info.backend_pid)
        while not stop.wait(0.5):
            try:
                pools = bouncer.show("POOLS")
                servers = bouncer.show("SERVERS")
                backends = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
                    " AND datname = current_database() AND NOT pid = ANY(%s)"
                    " AND application_name NOT LIKE 'fleet-%%'",
                    [own_pids],
                ).fetchone()[0]
            except psycopg.Error as exc:
                into.errors.append(str(exc))
                continue
            used = sum(
                int(p.get(k) or 0)
                for p in pools
                if p.get("database") != "pgbouncer"
                for k in ("sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login")
            )
            clients = sum(
                int(p.get("cl_active") or 0) + int(p.get("cl_waiting") or 0)
                for p in pools
                if p.get("database") != "pgbouncer"
            )
            into.pool_servers = max(into.pool_servers, used)
            into.servers = max(into.servers, len(servers))
            into.backends = max(into.backends, backends)
            into.clients = max(into.clients, clients)


def probe(url: str, own_pids: list[int], stop: threading.Event, into: Samples) -> None:
    """Every 1/PROBE_PER_SECOND s, enqueue one job on the probe queue and
    read its runtime row every 2 ms until a claim has taken it (the row is
    active, or already gone with the finished job): the time from the
    enqueue's commit to that read is one claim latency.

    Measured here, not from the database's timestamps: those are the start
    of each transaction, and a claim that waited for a limited queue's lock
    began before the job it found was committed."""
    from demo.jobs import noop

    from django_workhorse import store

    rows_json, _ = noop.options(queue=PROBE)._rows_json([{}])
    interval = 1 / PROBE_PER_SECOND
    with psycopg.connect(url, autocommit=True, application_name="fleet-probe") as conn:
        own_pids.append(conn.info.backend_pid)
        tick = time.monotonic()
        while not stop.is_set():
            with conn.cursor() as cursor:
                [(job_id, _inserted)] = store.enqueue_many(cursor, rows_json)
            committed = time.monotonic()
            while not stop.is_set():
                row = conn.execute(
                    "SELECT state FROM workhorse_job_runtime WHERE job_id = %s", [job_id]
                ).fetchone()
                if row is None or row[0] == "active":
                    into.claim_latencies.append((time.monotonic() - committed) * 1000)
                    break
                time.sleep(0.002)
            tick = max(tick + interval, time.monotonic())
            stop.wait(max(0.0, tick - time.monotonic()))


def max_overlap(spans: list[tuple[float, float]], limit: int) -> tuple[int, float]:
    """The most spans open at one instant (one starting as another ends does
    not overlap it), and the longest stretch with more than ``limit`` open."""
    points = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    best = current = 0
    longest = 0.0
    above_since: float | None = None
    for at, step in points:
        current += step
        best = max(best, current)
        if current > limit and above_since is None:
            above_since = at
        elif current <= limit and above_since is not None:
            longest = max(longest, at - above_since)
            above_since = None
    return best, longest


def watch_limited(url: str, own_pids: list[int], stop: threading.Event, into: Samples) -> None:
    """Count the limited queue's active runtime rows every 10 ms: the limit as
    the database holds it, in committed states."""
    with psycopg.connect(url, autocommit=True, application_name="fleet-limit-watch") as conn:
        own_pids.append(conn.info.backend_pid)
        while not stop.wait(0.01):
            (active,) = conn.execute(
                "SELECT count(*) FROM workhorse_job_runtime WHERE queue = %s AND state = 'active'",
                [LIMITED],
            ).fetchone()
            into.limited_active = max(into.limited_active, active)
            into.limited_snapshots += 1
            for at, n in conn.execute(
                "SELECT extract(epoch FROM t.at)::float8, t.n FROM workhorse_queue wq,"
                " unnest(wq.rate_starts, wq.rate_counts) AS t(at, n) WHERE wq.name = %s",
                [LIMITED],
            ).fetchall():
                into.limited_record[at] = n


def max_recorded_in_window(record: dict[float, int], period: float) -> int:
    """The most claimed jobs of ``record`` (time -> count) within any window of
    ``period`` seconds (half-open)."""
    entries = sorted(record.items())
    best = total = low = 0
    for at, n in entries:
        total += n
        while at - entries[low][0] >= period:
            total -= entries[low][1]
            low += 1
        best = max(best, total)
    return best


def max_in_window(starts: list[float], period: float) -> int:
    """The most starts within any window of ``period`` seconds (half-open)."""
    starts = sorted(starts)
    best = low = 0
    for high, at in enumerate(starts):
        while at - starts[low] >= period:
            low += 1
        best = max(best, high - low + 1)
    return best


def served_queues(limited: bool) -> list[str]:
    """The queues every process of the fleet serves: with or without the
    limited one."""
    return [DRAIN, LIMITED, PROBE] if limited else [DRAIN, PROBE]


def start_fleet(
    bouncer_url: str,
    direct_url: str,
    processes: int,
    concurrency: int,
    logs: Path,
    queues: list[str],
) -> list[subprocess.Popen]:
    env = worker_env(bouncer_url + "?conn_max_age=60", **SETTINGS)
    # The default alias goes through PgBouncer; LISTEN goes to the server.
    env.update(DATABASE_POOLED="1", DIRECT_DATABASE_URL=direct_url)
    fleet = []
    for i in range(processes):
        with (logs / f"host-{i}.log").open("wb") as log:
            fleet.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        MANAGE,
                        "runworker",
                        "--queues",
                        ",".join(queues),
                        "--concurrency",
                        str(concurrency),
                        "--id",
                        f"host-{i:02d}",
                    ],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    start_new_session=True,  # its own process group, as on a machine of its own
                )
            )
    return fleet


def wait_ready(
    fleet: list[subprocess.Popen],
    logs: Path,
    conn: psycopg.Connection,
    timeout: float = 600,
    prefix: str = "host-",
) -> None:
    """Every process of the fleet serving: its heartbeat has described it
    (``workhorse_worker``, a row per worker id starting ``prefix``, first
    seen during this run)."""
    deadline = time.monotonic() + timeout
    since = conn.execute("SELECT now()").fetchone()[0]
    while time.monotonic() < deadline:
        (ready,) = conn.execute(
            "SELECT count(*) FROM workhorse_worker WHERE worker_id LIKE %s AND first_seen_at >= %s",
            [prefix + "%", since],
        ).fetchone()
        dead = [i for i, proc in enumerate(fleet) if proc.poll() is not None]
        if dead:
            tail = (logs / f"{prefix}{dead[0]}.log").read_text(errors="replace")[-3000:]
            raise RuntimeError(f"worker {prefix}{dead[0]} exited at start:\n{tail}")
        if ready >= len(fleet):
            return
        time.sleep(0.5)
    raise TimeoutError(f"the fleet was not ready within {timeout} s")


def one_drain(
    server, url: str, processes: int, jobs: int, pool: int, concurrency: int, limited: bool
) -> dict:
    """One drain by ``processes`` workers; ``limited``: the fleet serves the
    limited queue too, and its 400 jobs are enqueued beside the drain."""
    pgbouncer = _load("workhorse_pgbouncer", ROOT / "scripts" / "pgbouncer.py")
    from demo.jobs import sleep_for

    from django_workhorse import store

    postmaster = int((server.base / "data" / "postmaster.pid").read_text().split()[0])
    conn = psycopg.connect(url, autocommit=True, application_name="fleet-bench")
    conn.execute(
        "TRUNCATE workhorse_job, workhorse_job_runtime, workhorse_job_outcome, "
        "workhorse_job_query, workhorse_job_dependency, workhorse_job_event, "
        "workhorse_attempt_history, workhorse_queue, workhorse_job_checkpoint CASCADE"
    )
    paused = (DRAIN, LIMITED) if limited else (DRAIN,)
    for queue in paused:
        conn.execute("SELECT * FROM workhorse_set_queue_paused_v1(%s, true)", [queue])
    enqueue_noops(conn, jobs, DRAIN)
    if limited:
        rows_json, _ = sleep_for.options(queue=LIMITED)._rows_json(
            [{"seconds": LIMITED_SLEEP}] * LIMITED_JOBS
        )
        with conn.cursor() as cursor:
            store.enqueue_many(cursor, rows_json)
    conn.execute("VACUUM ANALYZE")
    conn.execute("CHECKPOINT")
    killed: list[int] = []
    logs = Path(tempfile.mkdtemp(prefix="workhorse-fleet-"))
    with pgbouncer.PgBouncer(url, pool_size=pool, max_client_conn=2000) as bouncer:
        samples = Samples()
        stop = threading.Event()
        conn.execute("DELETE FROM workhorse_worker")  # the last run's killed processes
        fleet = start_fleet(bouncer.url, url, processes, concurrency, logs, served_queues(limited))
        try:
            wait_ready(fleet, logs, conn)
            own = [conn.info.backend_pid]
            threads = [
                threading.Thread(
                    target=sample, args=(bouncer, url, own, stop, samples), daemon=True
                ),
                threading.Thread(target=probe, args=(url, own, stop, samples), daemon=True),
            ]
            if limited:
                threads.append(
                    threading.Thread(
                        target=watch_limited, args=(url, own, stop, samples), daemon=True
                    )
                )
            startup_cpu = sum(process_cpu_seconds(proc.pid) for proc in fleet)
            rusage = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu_before = server_cpu_seconds(postmaster)
            (lsn_before,) = conn.execute("SELECT pg_current_wal_lsn()").fetchone()
            deleted_before = runtime_deletes(conn)
            for thread in threads:
                thread.start()
            for queue in paused:
                conn.execute("SELECT * FROM workhorse_set_queue_paused_v1(%s, false)", [queue])
            kill_at = None
            deadline = time.monotonic() + 3600
            while time.monotonic() < deadline:
                time.sleep(0.5)
                if kill_at is None and runtime_deletes(conn) - deleted_before >= jobs / 2:
                    victims = fleet[: max(1, processes // 3)]
                    for proc in victims:
                        os.killpg(proc.pid, signal.SIGKILL)
                        killed.append(proc.pid)
                    (kill_at,) = conn.execute("SELECT clock_timestamp()").fetchone()
                left = conn.execute(
                    "SELECT count(*) FROM workhorse_job_runtime WHERE queue <> %s", [PROBE]
                ).fetchone()[0]
                if left == 0:
                    break
            else:
                raise TimeoutError("the drain did not end within an hour")
            stop.set()
            for thread in threads:
                thread.join()
            waited = time.monotonic() + 30
            while (
                time.monotonic() < waited
                and conn.execute("SELECT count(*) FROM workhorse_job_runtime").fetchone()[0]
            ):
                time.sleep(0.2)
            (lsn_after,) = conn.execute("SELECT pg_current_wal_lsn()").fetchone()
            cpu_after = server_cpu_seconds(postmaster)
        finally:
            stop.set()  # the sampler would otherwise outlive a failed run
            for proc in fleet:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGTERM)
            for proc in fleet:
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        worker_rusage = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(logs, ignore_errors=True)  # kept when the run fails, for its workers' logs
    figures = results(conn, jobs, kill_at, [f"host-{i:02d}" for i in range(len(killed))])
    (wal,) = conn.execute("SELECT pg_wal_lsn_diff(%s, %s)", [lsn_after, lsn_before]).fetchone()
    total_jobs = figures["jobs_total"]
    figures.update(
        pickup_p50=percentile(samples.claim_latencies, 50),
        pickup_p99=percentile(samples.claim_latencies, 99),
        processes=processes,
        limited=limited,
        killed=len(killed),
        kill_at=kill_at,
        samples=samples,
        db_cpu_us=(cpu_after - cpu_before) / total_jobs * 1e6,
        wal_bytes=float(wal) / total_jobs,
        worker_cpu_us=(
            (worker_rusage.ru_utime + worker_rusage.ru_stime)
            - (rusage.ru_utime + rusage.ru_stime)
            - startup_cpu
        )
        / total_jobs
        * 1e6,
    )
    conn.close()
    return figures


def runtime_deletes(conn) -> int:
    """Runtime rows deleted so far (each finished job deletes one), from the
    statistics: cheap to ask twice a second, at most a second behind."""
    row = conn.execute(
        "SELECT n_tup_del FROM pg_stat_user_tables WHERE relname = 'workhorse_job_runtime'"
    ).fetchone()
    return int(row[0] if row else 0)


def results(conn, jobs: int, kill_at, killed_ids: list[str]) -> dict:
    """What the database says about the run."""
    states = dict(
        conn.execute(
            "SELECT o.state, count(*) FROM workhorse_job j"
            " JOIN workhorse_job_outcome o ON o.job_id = j.id WHERE j.queue = %s GROUP BY 1",
            [DRAIN],
        ).fetchall()
    )
    live = conn.execute("SELECT count(*) FROM workhorse_job_runtime").fetchone()[0]
    enqueued = conn.execute(
        "SELECT count(*) FROM workhorse_job WHERE queue = %s", [DRAIN]
    ).fetchone()[0]
    first, last, before_kill = conn.execute(
        "SELECT min(h.started_at), max(h.finished_at),"
        " count(*) FILTER (WHERE h.outcome = 'succeeded' AND h.finished_at < %s)"
        " FROM workhorse_attempt_history h JOIN workhorse_job j ON j.id = h.job_id"
        " WHERE j.queue = %s",
        [kill_at, DRAIN],
    ).fetchone()
    attempts = dict(
        conn.execute(
            "SELECT h.outcome::text, count(*) FROM workhorse_attempt_history h"
            " JOIN workhorse_job j ON j.id = h.job_id WHERE j.queue = %s GROUP BY 1",
            [DRAIN],
        ).fetchall()
    )
    limited = conn.execute(
        "SELECT extract(epoch FROM h.started_at), extract(epoch FROM h.finished_at)"
        " FROM workhorse_attempt_history h JOIN workhorse_job j ON j.id = h.job_id"
        " WHERE j.queue = %s",
        [LIMITED],
    ).fetchall()
    limited_done = conn.execute(
        "SELECT count(*) FROM workhorse_job j JOIN workhorse_job_outcome o ON o.job_id = j.id"
        " WHERE j.queue = %s AND o.state = 'succeeded'",
        [LIMITED],
    ).fetchone()[0]
    limited_states = dict(
        conn.execute(
            "SELECT coalesce(o.state::text,"
            " CASE WHEN rt.job_id IS NULL THEN 'lost' ELSE 'live' END), count(*)"
            " FROM workhorse_job j"
            " LEFT JOIN workhorse_job_outcome o ON o.job_id = j.id"
            " LEFT JOIN workhorse_job_runtime rt ON rt.job_id = j.id"
            " WHERE j.queue = %s GROUP BY 1",
            [LIMITED],
        ).fetchall()
    )
    limited_unsucceeded = [
        f"job {job_id} {state} (attempts {attempts}, stalls {stalls}): {message}; "
        f"its attempts: {history}"
        for job_id, state, attempts, stalls, message, history in conn.execute(
            "SELECT o.job_id, o.state::text, o.attempts, o.stall_count, o.error->>'message',"
            " (SELECT string_agg(format('%%s on %%s %%s..%%s', h.outcome, h.worker_id,"
            "  to_char(h.started_at, 'HH24:MI:SS.MS'), to_char(h.finished_at, 'HH24:MI:SS.MS')),"
            "  ', ' ORDER BY h.started_at)"
            "  FROM workhorse_attempt_history h WHERE h.job_id = o.job_id)"
            " FROM workhorse_job j JOIN workhorse_job_outcome o ON o.job_id = j.id"
            " WHERE j.queue = %s AND o.state <> 'succeeded' ORDER BY o.job_id",
            [LIMITED],
        ).fetchall()
    ]
    # A stalled attempt of a process that was not killed: a live worker whose
    # lease expired before it renewed it (late heartbeats, an overloaded host).
    stalls = {
        (queue, was_killed): n
        for queue, was_killed, n in conn.execute(
            "SELECT j.queue, split_part(h.worker_id, ':', 1) = ANY(%s), count(*)"
            " FROM workhorse_attempt_history h"
            " JOIN workhorse_job j ON j.id = h.job_id WHERE h.outcome = 'stalled' GROUP BY 1, 2",
            [killed_ids],
        ).fetchall()
    }
    (total,) = conn.execute("SELECT count(*) FROM workhorse_job").fetchone()
    seconds = (last - first).total_seconds()
    before = (kill_at - first).total_seconds() if kill_at else seconds
    return {
        "jobs_total": total,
        "enqueued": enqueued,
        "succeeded": states.get("succeeded", 0),
        "other_outcomes": {k: v for k, v in states.items() if k != "succeeded"},
        "live": live,
        "rate": states.get("succeeded", 0) / seconds,
        "rate_before_kill": before_kill / before if before > 0 else float("nan"),
        "seconds": seconds,
        "attempts": attempts,
        "limited_done": limited_done,
        "limited_states": limited_states,
        "stalls": stalls,
        "limited_unsucceeded": limited_unsucceeded,
        "limited_overlap": max_overlap(
            [(float(s), float(e)) for s, e in limited], LIMIT_CONCURRENCY
        ),
        "limited_window": max_in_window([float(s) for s, _ in limited], LIMIT_PERIOD),
    }


def variant(f: dict) -> str:
    """How a run served the limited queue, as its lines and tables say it."""
    return f"with {LIMITED}" if f["limited"] else f"without {LIMITED}"


def live_stalls(f: dict) -> int:
    """Stalled attempts of processes that were not killed: a live worker's
    lease expired before its renewal came (must be 0)."""
    return sum(n for (_, was_killed), n in f["stalls"].items() if not was_killed)


def limits_held(f: dict) -> bool | None:
    """Whether the limited queue's concurrency and rate limits held across the
    fleet and all its jobs succeeded; None when the run did not serve it."""
    if not f["limited"]:
        return None
    s = f["samples"]
    return (
        s.limited_active <= LIMIT_CONCURRENCY
        and max_recorded_in_window(s.limited_record, LIMIT_PERIOD) <= LIMIT_RATE
        and f["limited_done"] == LIMITED_JOBS
    )


def print_run(f: dict, jobs: int, pool: int, concurrency: int) -> None:
    n = f["processes"]
    section(
        f"fleet: {n} runworker processes (own process groups, --concurrency {concurrency}) "
        f"through PgBouncer (transaction mode, pool {pool}), {jobs:,} no-op jobs, "
        f"{variant(f)} among the served queues; {f['killed']} SIGKILLed midway"
    )
    report("drain rate, whole drain (kill and recovery included)", f["rate"], "jobs/s")
    report("drain rate, before the kill", f["rate_before_kill"], "jobs/s")
    s = f["samples"]
    report(
        f"claim latency p50, probe jobs ({len(s.claim_latencies)} jobs)",
        f["pickup_p50"],
        "ms",
        "enqueue commit -> seen claimed",
    )
    report("claim latency p99, probe jobs", f["pickup_p99"], "ms")
    report(
        "server connections used, PgBouncer SHOW POOLS (max)",
        s.pool_servers,
        "conns",
        f"pool {pool}",
    )
    report("server connections, PgBouncer SHOW SERVERS (max)", s.servers, "conns")
    report("server connections, pg_stat_activity client backends (max)", s.backends, "conns")
    report("client connections to PgBouncer, active + waiting (max)", s.clients, "conns")
    report("server CPU per job (every server process)", f["db_cpu_us"], "us")
    report("WAL per job", f["wal_bytes"], "bytes")
    report("worker CPU per job (all processes)", f["worker_cpu_us"], "us")
    attempts = f["attempts"]
    twice = sum(attempts.values()) - f["enqueued"]
    lost = f["enqueued"] - f["succeeded"]
    verdict = (
        "OK"
        if lost == 0 and f["live"] == 0 and not f["other_outcomes"]
        else f"FAILED: {lost} without a success, {f['live']} still live, "
        f"others {f['other_outcomes']}"
    )
    print(
        f"  outcomes: {f['succeeded']:,} of {f['enqueued']:,} succeeded, exactly once each "
        f"(one outcome row per job); {f['live']} live runtime rows left; "
        f"attempts {dict(sorted(attempts.items()))}, {twice} ran twice -> {verdict}",
        flush=True,
    )
    if f["limited"]:
        print_limits(f)
    else:
        print(f"  limits: not checked ({LIMITED} not served in this run)", flush=True)
    stalls = f["stalls"]
    print(
        "  stalled attempts: "
        + (
            ", ".join(
                f"{n} on {queue} of {'killed' if was_killed else 'LIVE'} processes"
                for (queue, was_killed), n in sorted(stalls.items())
            )
            or "none"
        )
        + (
            " (a live process's stall: its lease expired before its heartbeat renewed it)"
            if any(not was_killed for _, was_killed in stalls)
            else ""
        ),
        flush=True,
    )
    live = live_stalls(f)
    print(f"  stalls of live processes: {live} -> {'OK' if live == 0 else 'FAILED'}", flush=True)
    if f["limited_unsucceeded"] and f["kill_at"] is not None:
        print(
            f"    (host-00 to host-{f['killed'] - 1:02d} SIGKILLed at "
            f"{f['kill_at']:%H:%M:%S.%f}; leases {LEASE:g} s)",
            flush=True,
        )
    for line in f["limited_unsucceeded"]:
        print(f"    {line}", flush=True)
    if s.errors:
        print(f"  (sampler errors: {len(s.errors)}, first: {s.errors[0]})")


def print_limits(f: dict) -> None:
    """The limited queue's lines: the concurrency limit, the rate limit, its
    jobs' outcomes, and the verdict of the three."""
    s = f["samples"]
    held = "held" if s.limited_active <= LIMIT_CONCURRENCY else "EXCEEDED"
    overlap, above = f["limited_overlap"]
    print(
        f"  global concurrency limit {LIMIT_CONCURRENCY}: at most {s.limited_active} active in "
        f"{s.limited_snapshots:,} snapshots of the runtime rows (every 10 ms) -> {held}; "
        f"attempt_history's recorded times overlap at most {overlap}"
        + (
            f", above the limit for at most {above * 1000:.1f} ms at a time (the times are "
            "transaction starts: a claim that waited for the queue's lock records when it "
            "began waiting)"
            if overlap > LIMIT_CONCURRENCY
            else ""
        ),
        flush=True,
    )
    recorded = max_recorded_in_window(s.limited_record, LIMIT_PERIOD)
    held = "held" if recorded <= LIMIT_RATE else "EXCEEDED"
    print(
        f"  rate limit {LIMIT_RATE} per {LIMIT_PERIOD:g} s: at most {recorded} claimed in any "
        f"{LIMIT_PERIOD:g} s window of the queue's own record ({len(s.limited_record)} claims) "
        f"-> {held}; by attempt_history's start times (transaction starts) at most "
        f"{f['limited_window']} ({f['limited_done']} of {LIMITED_JOBS} limited jobs succeeded)",
        flush=True,
    )
    others = {k: v for k, v in f["limited_states"].items() if k != "succeeded"}
    print(
        f"  limited jobs: {dict(sorted(f['limited_states'].items()))}"
        + (
            " -> OK"
            if not others
            else " -> NOT ALL SUCCEEDED ('lost': neither an outcome nor a runtime row; "
            "'live': a runtime row left)"
        ),
        flush=True,
    )
    print(
        f"  limits held (concurrency <= {LIMIT_CONCURRENCY} in every snapshot, rate <= "
        f"{LIMIT_RATE} per {LIMIT_PERIOD:g} s, all {LIMITED_JOBS} limited jobs succeeded): "
        + ("yes -> OK" if limits_held(f) else "NO -> FAILED"),
        flush=True,
    )


VARIANTS = {"both": (True, False), "with": (True,), "without": (False,)}
"""``--limited``: which runs each process count gets (True: the fleet serves
the limited queue)."""

RATIO_TARGET = 0.9
"""Issue 33: the fleet's rate with the limited queue among its queues is at
least this share of its rate without it."""


def turns(processes: list[int], limited: str, rounds: int) -> list[tuple[int, bool]]:
    """The runs in order: for each process count, ``rounds`` runs of each
    variant, the variants taking turns and the first of each pair
    alternating (with, without; without, with; ...) across the whole
    sequence, so neither side always runs first on a warmer server."""
    order: list[tuple[int, bool]] = []
    flip = False
    for n in processes:
        for _ in range(rounds):
            pair = VARIANTS[limited]
            order.extend((n, with_limited) for with_limited in (pair[::-1] if flip else pair))
            flip = not flip
    return order


def run(
    processes: list[int],
    jobs: int,
    pool: int,
    concurrency: int,
    limited: str = "both",
    rounds: int = 1,
) -> list[dict]:
    embedded = _load("workhorse_with_database", ROOT / "scripts" / "with_database.py")
    server = embedded.EmbeddedServer()
    base = server.start()
    url = base.rsplit("/", 1)[0] + "/workhorse_fleet"
    runs = []
    try:
        with psycopg.connect(base, dbname="postgres", autocommit=True) as admin:
            admin.execute("CREATE DATABASE workhorse_fleet")
            version = admin.execute("SHOW server_version").fetchone()[0]
        subprocess.run(
            [sys.executable, MANAGE, "migrate", "--verbosity", "0"],
            env=worker_env(url),
            check=True,
            capture_output=True,
        )
        print(
            f"\nfleet server: embedded PostgreSQL {version} at 127.0.0.1:{server.port}", flush=True
        )
        for n, with_limited in turns(processes, limited, rounds):
            figures = one_drain(server, url, n, jobs, pool, concurrency, with_limited)
            print_run(figures, jobs, pool, concurrency)
            runs.append(figures)
        if len(runs) > 1:
            print_curve(runs)
        if limited == "both":
            print_ratios(runs)
    finally:
        server.stop()
    return runs


def print_curve(runs: list[dict]) -> None:
    section("fleet: the curve")
    print(
        f"  {'processes':>9} {'limited':>8} {'jobs/s':>9} {'before kill':>12} {'p50 ms':>8}"
        f" {'p99 ms':>8} {'server CPU us/job':>18} {'WAL B/job':>10} {'servers':>8}"
        f" {'live stalls':>12} {'limits held':>12}"
    )
    for f in sorted(runs, key=lambda f: (f["processes"], not f["limited"])):
        held = limits_held(f)
        print(
            f"  {f['processes']:>9} {'with' if f['limited'] else 'without':>8}"
            f" {f['rate']:>9,.0f} {f['rate_before_kill']:>12,.0f}"
            f" {f['pickup_p50']:>8.1f} {f['pickup_p99']:>8.1f} {f['db_cpu_us']:>18.0f}"
            f" {f['wal_bytes']:>10.0f} {f['samples'].pool_servers:>8} {live_stalls(f):>12}"
            f" {'-' if held is None else 'yes' if held else 'NO':>12}",
            flush=True,
        )


def print_ratios(runs: list[dict]) -> None:
    """Per process count: the rates with and without the limited queue (the
    median of each side's runs) and their ratio, against RATIO_TARGET."""
    section(f"fleet: jobs/s with {LIMITED} served by the whole fleet / without it")
    print(
        f"  {'processes':>9} {'with, before kill':>18} {'without':>9} {'ratio':>7}"
        f" {'with, whole drain':>18} {'without':>9} {'ratio':>7}  target >= {RATIO_TARGET:g}"
    )
    for n in sorted({f["processes"] for f in runs}):
        sides = {
            key: [f for f in runs if f["processes"] == n and f["limited"] is key]
            for key in (True, False)
        }
        if not sides[True] or not sides[False]:
            continue

        def rate(key: bool, field: str, sides=sides) -> float:
            return median([f[field] for f in sides[key]])

        before = rate(True, "rate_before_kill") / rate(False, "rate_before_kill")
        whole = rate(True, "rate") / rate(False, "rate")
        print(
            f"  {n:>9} {rate(True, 'rate_before_kill'):>18,.0f}"
            f" {rate(False, 'rate_before_kill'):>9,.0f} {before:>7.2f}"
            f" {rate(True, 'rate'):>18,.0f} {rate(False, 'rate'):>9,.0f} {whole:>7.2f}"
            f"  {'OK' if before >= RATIO_TARGET else 'BELOW'}",
            flush=True,
        )


def parse_processes(text: str) -> list[int]:
    import argparse

    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--processes takes process counts separated by commas, e.g. 2,6,12,24; got {text!r}"
        ) from None
    if not counts or any(n < 1 or n > 200 for n in counts):
        raise argparse.ArgumentTypeError(f"each process count must be from 1 to 200, got {text!r}")
    return counts
