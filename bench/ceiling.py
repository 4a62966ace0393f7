"""The ceiling of one primary: jobs/s per CPU core of PostgreSQL (docs/scaling.md).

``python -m bench ceiling`` drains 20,000 no-op jobs with one burst worker
process (``--concurrency 100``: claims and finishes in batches), three times,
then 3,000 with one slot (a claim and a finish per job), and counts the CPU time the
server's backends of that worker used: every 20 ms it looks the worker's
connections up in ``pg_stat_activity`` (by their ``workhorse-*``
application_name) and reads each backend's user and system time from
``/proc/<pid>/stat`` (a backend is forked with none, so its last reading is
what it used, less at most one interval). Server CPU per job is their sum
over the jobs; one core's ceiling is its inverse. Left out: the WAL writer,
the checkpointer and autovacuum, shared with everything else on the server.
The server must run on this machine (``/proc``), as ``make bench``'s does.
"""

from __future__ import annotations

import os
import threading

from . import worker
from .common import median, report, reset, section

JOBS = 20_000
JOBS_ONE_SLOT = 3_000
"""Jobs of the one-slot drains: each is a claim and a finish of its own."""
RUNS = 3
TICK = os.sysconf("SC_CLK_TCK")


def backend_cpu(pid: int) -> float | None:
    """User plus system CPU seconds of process ``pid``; None once it is gone."""
    try:
        stat = open(f"/proc/{pid}/stat").read()  # noqa: SIM115 (read at once)
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class BackendCpu(threading.Thread):
    """Samples the CPU of the worker's backends until ``stop()``."""

    def __init__(self, conn) -> None:
        super().__init__(daemon=True)
        self.conn = conn
        self.used: dict[int, float] = {}
        self._stop = threading.Event()

    def run(self) -> None:
        while not self._stop.wait(0.02):
            pids = [
                row[0]
                for row in self.conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                    " AND application_name LIKE 'workhorse-%' AND pid <> pg_backend_pid()"
                    " AND application_name <> 'workhorse-bench'"
                ).fetchall()
            ]
            for pid in pids:
                cpu = backend_cpu(pid)
                if cpu is not None:
                    self.used[pid] = cpu

    def stop(self) -> float:
        self._stop.set()
        self.join()
        return sum(self.used.values())


def run(conn, url: str) -> None:
    for concurrency, jobs in ((100, JOBS), (1, JOBS_ONE_SLOT)):
        ceiling(conn, url, concurrency, jobs)


def ceiling(conn, url: str, concurrency: int, jobs: int) -> None:
    from .common import raw_connection

    section(
        f"the ceiling of one primary: server CPU per job, drains of {jobs:,} no-op jobs, "
        f"1 process, --concurrency {concurrency} ({RUNS} runs)"
    )
    rates, per_job = [], []
    for _ in range(RUNS):
        reset(conn)
        watcher_conn = raw_connection()
        watcher = BackendCpu(watcher_conn)
        watcher.start()
        try:
            rate, _ = worker.drain(conn, url, jobs, 1, concurrency)
        finally:
            cpu = watcher.stop()
            watcher_conn.close()
        rates.append(rate)
        per_job.append(cpu / jobs)
    cpu_us = median(per_job) * 1e6
    spread = f"runs {min(per_job) * 1e6:,.1f}-{max(per_job) * 1e6:,.1f}"
    report("drain, 1 process", median(rates), "jobs/s", f"median of {RUNS}")
    report("server CPU per job (the worker's backends)", cpu_us, "us", f"median, {spread}")
    report("jobs/s one server core can carry (1 / CPU per job)", 1e6 / cpu_us, "jobs/s")
    print(f"  (load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})", flush=True)
