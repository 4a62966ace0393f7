"""Single enqueue as the job table grows, with statistics taken when it was empty.

A producer's session may first run the enqueue while the tables are empty
(after a deploy, or an ``ANALYZE`` of a fresh database) and then live while
they grow for days; on a server whose autovacuum is off or behind, nothing
refreshes the statistics. The enqueue's plans must not depend on them: the
rate per 100,000-row block should stay flat from 0 to 1,000,000 jobs.

Each block measures ``SAMPLES`` single enqueues through the public API (one
transaction each, half of them with an idempotency key, which makes the
enqueue look for the key), all on one long-lived Django connection, then
grows the history by 100,000 finished jobs written in bulk without
``ANALYZE``.
"""

from __future__ import annotations

from django.db import connection

from .common import fabricate_history, report, reset, section, timed

BLOCK = 100_000
BLOCKS = 10
SAMPLES = 1000
TABLES = (
    "workhorse_job",
    "workhorse_job_runtime",
    "workhorse_job_outcome",
    "workhorse_job_query",
    "workhorse_job_event",
    "workhorse_attempt_history",
)


def enqueue_block(block: int) -> tuple[float, float]:
    """Rates (jobs/s) of SAMPLES/2 plain and SAMPLES/2 keyed single enqueues."""
    from demo.jobs import noop

    half = SAMPLES // 2
    with timed() as plain:
        for _ in range(half):
            noop.enqueue()
    with timed() as keyed:
        for i in range(half):
            noop.options(idempotency_key=f"growth-{block}-{i}").enqueue()
    return half / plain["seconds"], half / keyed["seconds"]


def run(conn) -> None:
    reset(conn)
    for table in TABLES:
        conn.execute(f"ANALYZE {table}")  # statistics of empty tables
    connection.ensure_connection()
    section(
        "single enqueue as history grows to 1,000,000 jobs, statistics taken empty"
        " (one long-lived session; autovacuum: "
        + conn.execute("SHOW autovacuum").fetchone()[0]
        + ")"
    )
    print(f"  {'jobs in table':>14} {'plain jobs/s':>13} {'keyed jobs/s':>13}", flush=True)
    rates = []
    for block in range(BLOCKS + 1):
        jobs = conn.execute("SELECT count(*) FROM workhorse_job").fetchone()[0]
        plain, keyed = enqueue_block(block)
        rates.append((plain, keyed))
        print(f"  {jobs:>14,} {plain:>13,.0f} {keyed:>13,.0f}", flush=True)
        if block < BLOCKS:
            fabricate_history(conn, BLOCK - SAMPLES, analyze=False)
    first, last = rates[0], rates[-1]
    report("last block / first block, plain single enqueue", last[0] / first[0], "x", "flat ~1")
    report("last block / first block, keyed single enqueue", last[1] / first[1], "x", "flat ~1")
