"""Checkpoints and durable sleep (``python -m bench durable``).

* Checkpoint writes: one burst worker drains jobs that each record ten
  trivial checkpoints (``demo.jobs.ten_checkpoints``); jobs/s and
  checkpoints/s over the span from the first claim to the last finish.
* Sleep: 20,000 jobs that each sleep once for 0 s (claim, sleep write, claim
  again, replay, finish) against the plain drain of 20,000 no-op jobs, in
  turns on the same machine; the ratio of the medians is the figure.
* Where checkpoints are loaded: the claim of 100 jobs as it is, and with the
  job's checkpoints aggregated into each claimed row (what loading them with
  the claim would cost every claim), in turns; and the one round trip a run
  pays instead, on its first checkpoint or sleep.
"""

from __future__ import annotations

import time

from .common import median, report, section
from .worker import enqueue_noops, start_worker, wait_drained

TURNS = 3
CONCURRENCY = 10
"""Handler slots of the checkpoint and sleep runs: each slot that writes
checkpoints opens a connection of its own (the server is shared)."""


def _clear(conn, queue: str) -> None:
    conn.execute(
        "DELETE FROM workhorse_job_checkpoint c USING workhorse_job j"
        " WHERE j.id = c.job_id AND j.queue = %s",
        [queue],
    )
    conn.execute("DELETE FROM workhorse_job_runtime WHERE queue = %s", [queue])
    for table in ("workhorse_attempt_history", "workhorse_job_outcome", "workhorse_job_query"):
        conn.execute(
            f"DELETE FROM {table} h USING workhorse_job j WHERE j.id = h.job_id AND j.queue = %s",
            [queue],
        )
    conn.execute("DELETE FROM workhorse_job WHERE queue = %s", [queue])


def _enqueue(conn, job, count: int) -> None:
    from django_workhorse import store

    for start in range(0, count, 1000):
        rows_json, _ = job._rows_json([{}] * min(1000, count - start))
        with conn.cursor() as cursor:
            store.enqueue_many(cursor, rows_json)


def _span(conn, queue: str) -> tuple[int, float]:
    """Jobs succeeded, and seconds from the first claim (of any attempt,
    slept ones too) to the last finish, on the database clock."""
    row = conn.execute(
        "SELECT count(*) FILTER (WHERE h.outcome = 'succeeded'),"
        " extract(epoch FROM max(h.finished_at) - min(h.started_at))"
        " FROM workhorse_attempt_history h JOIN workhorse_job j ON j.id = h.job_id"
        " WHERE j.queue = %s",
        [queue],
    ).fetchone()
    return row[0], float(row[1] or 0)


def _drain(conn, url: str, queue: str, jobs: int, enqueue) -> float:
    """Drain ``jobs`` of ``queue`` with one burst worker; jobs/s."""
    _clear(conn, queue)
    enqueue(conn, jobs)
    conn.execute("VACUUM ANALYZE workhorse_job_runtime")
    conn.execute("CHECKPOINT")
    flags = ["--burst", "--queues", queue, "--concurrency", str(CONCURRENCY)]
    start_worker(url, *flags).wait(900)
    wait_drained(conn, jobs, queue)
    done, seconds = _span(conn, queue)
    assert done == jobs, f"{done} of {jobs} jobs of {queue} succeeded"
    return done / seconds


def checkpoint_writes(conn, url: str, jobs: int = 2_000) -> None:
    from demo.jobs import ten_checkpoints

    rates = [
        _drain(conn, url, "bench-checkpoints", jobs, lambda c, n: _enqueue(c, ten_checkpoints, n))
        for _ in range(TURNS)
    ]
    spread = f"runs {min(rates):,.0f}-{max(rates):,.0f} jobs/s"
    report(
        f"drain {jobs:,} jobs of 10 checkpoints, 1 process",
        median(rates),
        "jobs/s",
        f"--concurrency {CONCURRENCY}; median of {TURNS}, {spread}",
    )
    report("  checkpoint writes", median(rates) * 10, "ckpt/s")


def sleep_ratio(conn, url: str, jobs: int = 20_000) -> None:
    from demo.jobs import sleep_once

    plain, sleeping = [], []
    for _ in range(TURNS):
        plain.append(_drain(conn, url, "bench", jobs, lambda c, n: enqueue_noops(c, n, "bench")))
        sleeping.append(
            _drain(conn, url, "bench-sleep", jobs, lambda c, n: _enqueue(c, sleep_once, n))
        )
    report(f"drain {jobs:,} no-op jobs, 1 process", median(plain), "jobs/s", _runs(plain))
    report(
        f"drain {jobs:,} jobs sleeping once for 0 s, 1 process",
        median(sleeping),
        "jobs/s",
        _runs(sleeping),
    )
    report(
        "  sleeping / plain",
        median(sleeping) / median(plain),
        "ratio",
        f"--concurrency {CONCURRENCY}; median of {TURNS} each, in turns",
    )


def _runs(rates: list[float]) -> str:
    return f"runs {min(rates):,.0f}-{max(rates):,.0f}"


CLAIM_WITH_CHECKPOINTS = """
CREATE OR REPLACE FUNCTION bench_claim_with_checkpoints(
    p_worker text, p_queues text[], p_limits integer[], p_lease double precision
) RETURNS TABLE (job_id bigint, checkpoints jsonb)
LANGUAGE sql AS $$
    SELECT c.job_id,
           (SELECT jsonb_object_agg(k.name, k.result) FROM workhorse_job_checkpoint k
            WHERE k.job_id = c.job_id)
    FROM workhorse_claim_many_v1(p_worker, p_queues, p_limits, p_lease) c
$$
"""


def load_cost(conn, jobs: int = 20_000, batch: int = 100) -> None:
    """The claim with and without the checkpoints of each claimed job, in
    turns, over a queue where one job in ten has ten checkpoints; then the
    first-use read a run makes instead."""
    from demo.jobs import noop

    from django_workhorse import store

    conn.execute(CLAIM_WITH_CHECKPOINTS)
    queue = "bench"
    per_job: dict[str, list[float]] = {"plain": [], "with checkpoints": []}
    for _ in range(TURNS):
        for variant in per_job:
            _clear(conn, queue)
            _enqueue(conn, noop, jobs)
            conn.execute(
                "INSERT INTO workhorse_job_checkpoint (job_id, name, result, attempt)"
                " SELECT j.id, 'stage-' || s, to_jsonb(s), 1"
                " FROM workhorse_job j, generate_series(0, 9) s"
                " WHERE j.queue = %s AND j.id %% 10 = 0",
                [queue],
            )
            conn.execute("VACUUM ANALYZE workhorse_job_runtime, workhorse_job_checkpoint")
            call = (
                "SELECT * FROM workhorse_claim_many_v1(%s, %s, %s, 30)"
                if variant == "plain"
                else "SELECT * FROM bench_claim_with_checkpoints(%s, %s, %s, 30)"
            )
            claimed, started = 0, time.perf_counter()
            while True:
                rows = conn.execute(call, ["bench-claimer", [queue], [batch]]).fetchall()
                if not rows:
                    break
                claimed += len(rows)
            per_job[variant].append((time.perf_counter() - started) / claimed * 1e6)
    plain, loaded = median(per_job["plain"]), median(per_job["with checkpoints"])
    report(f"claim of {batch}, per job, as it is", plain, "us")
    report(f"claim of {batch}, per job, loading checkpoints too", loaded, "us")
    report("  extra on every claimed job", loaded - plain, "us", f"median of {TURNS}, in turns")
    ids = [r[0] for r in conn.execute("SELECT id FROM workhorse_job LIMIT 2000").fetchall()]
    with conn.cursor() as cursor:
        started = time.perf_counter()
        for job_id in ids:
            store.get_checkpoints(cursor, job_id)
        first_use = (time.perf_counter() - started) / len(ids) * 1e6
    report(
        "first-use read of a run's checkpoints (one round trip)",
        first_use,
        "us",
        "paid only by runs that checkpoint or sleep",
    )
    _clear(conn, queue)


def run(conn, url: str) -> None:
    section("checkpoints and durable sleep (issue: durable execution)")
    checkpoint_writes(conn, url)
    sleep_ratio(conn, url)
    load_cost(conn)
