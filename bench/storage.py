"""Bytes on disk per 1,000,000 finished no-op jobs.

Every job goes the whole way through the SQL functions a worker calls
(``enqueue_many`` of 1,000, ``claim_many`` and ``succeed_many`` of 1,000), so
the rows, index entries and partitions are exactly those a real drain
leaves; then ``VACUUM`` and the size of every workhorse relation (tables,
their indexes and TOAST, each day partition), less what the empty schema
took before. Printed per table family and in all, scaled to 1,000,000 jobs
when fewer were run (``--storage-jobs``).
"""

from __future__ import annotations

from django_workhorse import store

from .common import report, reset, section, timed
from .worker import enqueue_noops

TARGET = 600e6  # bytes per 1,000,000 finished jobs

SIZES = """
    SELECT coalesce(p.relname, c.relname) AS family, sum(pg_total_relation_size(c.oid))
    FROM pg_class c
    LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
    LEFT JOIN pg_class p ON p.oid = i.inhparent
    WHERE c.relkind = 'r' AND c.relname LIKE 'workhorse%%'
    GROUP BY 1
"""


def sizes(conn) -> dict[str, int]:
    return {name: int(size) for name, size in conn.execute(SIZES).fetchall()}


def run(conn, jobs: int = 1_000_000) -> None:
    reset(conn)
    conn.execute("VACUUM")
    empty = sizes(conn)
    section(
        f"storage of {jobs:,} finished no-op jobs (enqueue, claim and succeed by the functions)"
    )
    with timed() as t:
        for start in range(0, jobs, 100_000):
            enqueue_noops(conn, min(100_000, jobs - start))
            conn.execute("VACUUM ANALYZE workhorse_job_runtime")
            with conn.cursor() as cur:
                while True:
                    claimed = store.claim_many(cur, "bench-storage", ["bench"], [1000], 30)
                    if not claimed:
                        break
                    store.succeed_many(
                        cur,
                        "bench-storage",
                        [j.job_id for j in claimed],
                        [j.fence for j in claimed],
                        ["null"] * len(claimed),
                    )
    print(f"  ({jobs:,} jobs through the functions in {t['seconds']:.0f} s)", flush=True)
    conn.execute("VACUUM")
    after = sizes(conn)
    scale = 1_000_000 / jobs
    total = 0.0
    for family in sorted(after, key=lambda f: after[f] - empty.get(f, 0), reverse=True):
        grown = (after[family] - empty.get(family, 0)) * scale
        total += grown
        if grown > 0:
            report(f"  {family}", grown / 1e6, "MB")
    report(
        "storage per 1,000,000 finished no-op jobs (all relations, after VACUUM)",
        total / 1e6,
        "MB",
        f"target <= {TARGET / 1e6:.0f} MB",
    )
