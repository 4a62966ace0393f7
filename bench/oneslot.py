"""The worker a newcomer meets first: ``runworker`` with its defaults (one
slot per queue), against the floor of the same work on a plain table.

The floor is one client running two transactions per row, as a one-slot
worker must (one marks a row taken, the next deletes it), on a table with
nothing but a primary key. Printed: both rates, their ratio (target >= 0.6)
and the worker's CPU per job (target <= 0.15 ms), start-up subtracted.
"""

from __future__ import annotations

from .common import median, report, reset, section, timed
from .worker import drain, startup_cpu

JOBS = 5_000
RUNS = 3


def bare_two_transactions(conn, rows: int = JOBS) -> float:
    conn.execute("DROP TABLE IF EXISTS bench_bare_slot")
    conn.execute(
        "CREATE TABLE bench_bare_slot"
        " (id bigserial PRIMARY KEY, taken boolean NOT NULL DEFAULT false)"
    )
    conn.execute(
        f"INSERT INTO bench_bare_slot (taken) SELECT false FROM generate_series(1, {rows})"
    )
    conn.execute("VACUUM ANALYZE bench_bare_slot")
    done = 0
    with conn.cursor() as cur, timed() as t:
        while True:
            cur.execute(
                "UPDATE bench_bare_slot SET taken = true WHERE id = (SELECT id FROM bench_bare_slot"
                " WHERE NOT taken ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id"
            )
            row = cur.fetchone()
            if row is None:
                break
            cur.execute("DELETE FROM bench_bare_slot WHERE id = %s", [row[0]])
            done += 1
    conn.execute("DROP TABLE bench_bare_slot")
    return done / t["seconds"]


def run(conn, url: str) -> None:
    reset(conn)
    section(f"one slot: runworker defaults against two bare transactions per row ({JOBS:,} jobs)")
    base_cpu = startup_cpu(url)
    ours, bare, cpus = [], [], []
    for _ in range(RUNS):  # in turns, so the same minute's noise hits both
        bare.append(bare_two_transactions(conn))
        rate, cpu = drain(conn, url, JOBS, 1, 1)
        ours.append(rate)
        cpus.append(max(0.0, cpu - base_cpu) / JOBS * 1000)
    report("bare: mark taken, then delete, one transaction each", median(bare), "rows/s")
    report("drain, runworker --concurrency 1 (one slot)", median(ours), "jobs/s")
    report("  ratio to the bare loop", median(ours) / median(bare), "x", "target >= 0.6")
    report(
        "  worker CPU per job at one slot (start-up subtracted)",
        median(cpus),
        "ms",
        "target <= 0.15",
    )
