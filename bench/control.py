"""Queue control: queue limits that never bind, as ratios to the plain drain,
and how long the cancel of a running job takes to end it.

The three drains (plain; a queue whose global concurrency limit is above the
worker's slots; a queue whose rate limit is above the rate the worker
reaches) run in turns, so all three see the same machine; each ratio is the
median of its runs over the median of the plain runs. Each drain is one
burst worker of 100 slots over no-op jobs, the plain drain's set-up.

The cancel latency is measured on the database clock: from the commit of
``workhorse_cancel_v1`` (its ``cancel_requested`` event) to the commit of
the worker's ack (the ``canceled`` outcome), one running async job at a
time, told by NOTIFY (the heartbeat is set far too slow to be the
messenger).
"""

from __future__ import annotations

import signal
import time

from .common import median, percentile, report, section
from .worker import drained_span, start_worker, wait_drained

TURNS = 7
JOBS = 20_000
SLOTS = 100
LIMITED = {
    "plain": ("bench", {}),
    "concurrency limit": ("bench-concurrency", {"global_concurrency": 10 * SLOTS}),
    # 10,000 starts per 0.1 s: 100,000 jobs/s, several times what one worker
    # reaches, so the limit is checked on every claim and never holds one back.
    "rate limit": ("bench-rate", {"rate": 10_000, "period": 0.1}),
}
CANCELS = 200


def clear(conn, queue: str) -> None:
    conn.execute("DELETE FROM workhorse_job_runtime WHERE queue = %s", [queue])
    for table in ("workhorse_attempt_history", "workhorse_job_outcome", "workhorse_job_query"):
        conn.execute(
            f"DELETE FROM {table} h USING workhorse_job j WHERE j.id = h.job_id AND j.queue = %s",
            [queue],
        )
    conn.execute("DELETE FROM workhorse_job WHERE queue = %s", [queue])


def drain_once(conn, url: str, queue: str, limits: dict, jobs: int = JOBS) -> float:
    from demo.jobs import noop

    from django_workhorse import store

    clear(conn, queue)
    bound = noop.options(queue=queue)
    for start in range(0, jobs, 1000):
        rows_json, _ = bound._rows_json([{}] * min(1000, jobs - start))
        with conn.cursor() as cursor:
            store.enqueue_many(cursor, rows_json)
    conn.execute("VACUUM ANALYZE workhorse_job_runtime")
    conn.execute("CHECKPOINT")
    settings = {"QUEUES": {queue: limits}} if limits else {}
    start_worker(url, "--burst", "--queues", queue, "--concurrency", str(SLOTS), **settings).wait(
        600
    )
    wait_drained(conn, jobs, queue)
    done, seconds = drained_span(conn, queue)
    return done / seconds


def limits_ratio(conn, url: str) -> None:
    rates: dict[str, list[float]] = {name: [] for name in LIMITED}
    names = list(LIMITED)
    for turn in range(TURNS):
        # The order turns each round, so no side always runs first or last.
        shift = turn % len(names)
        for name in names[shift:] + names[:shift]:
            queue, limits = LIMITED[name]
            rates[name].append(drain_once(conn, url, queue, limits))
    plain = median(rates["plain"])
    report(
        f"drain {JOBS:,} no-op jobs, 1 process, plain",
        plain,
        "jobs/s",
        f"runs {min(rates['plain']):,.0f}-{max(rates['plain']):,.0f}",
    )
    for name in ("concurrency limit", "rate limit"):
        _, limits = LIMITED[name]
        runs = rates[name]
        report(
            f"  with a {name} that never binds",
            median(runs),
            "jobs/s",
            f"{limits}; runs {min(runs):,.0f}-{max(runs):,.0f}",
        )
        report(
            f"  {name} / plain",
            median(runs) / plain,
            "ratio",
            f"target >= 0.95; median of {TURNS} runs each, in turns",
        )


def cancel_latency(conn, url: str, samples: int = CANCELS) -> None:
    from demo.jobs import await_cancel

    clear(conn, "bench-cancel")
    proc = start_worker(
        url,
        "--queues",
        "bench-cancel",
        "--concurrency",
        "4",
        LOCK_DURATION=600,
        LOCK_RENEW_INTERVAL=300,
    )
    latencies: list[float] = []
    try:
        time.sleep(4)  # start-up
        for _ in range(samples):
            job_id = await_cancel.enqueue().id
            wait_for(
                conn,
                "SELECT 1 FROM workhorse_job_runtime WHERE job_id = %s AND state = 'active'",
                job_id,
            )
            conn.execute("SELECT * FROM workhorse_cancel_v1(%s, 'bench')", [job_id])
            wait_for(conn, "SELECT 1 FROM workhorse_job_outcome WHERE job_id = %s", job_id)
            seconds = conn.execute(
                "SELECT extract(epoch FROM o.finished_at - e.at), o.state"
                " FROM workhorse_job_outcome o JOIN workhorse_job_event e"
                " ON e.job_id = o.job_id AND e.kind = 'cancel_requested' WHERE o.job_id = %s",
                [job_id],
            ).fetchone()
            assert seconds[1] == "canceled", f"job {job_id} ended {seconds[1]}"
            latencies.append(float(seconds[0]) * 1000)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    for pct in (50, 99):
        report(
            f"cancel latency p{pct} (cancel commit -> canceled commit)",
            percentile(latencies, pct),
            "ms",
            f"{samples} cancels of a running async job, told by NOTIFY; DB clock",
        )


def wait_for(conn, query: str, job_id: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not conn.execute(query, [job_id]).fetchone():
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id}: {query}")
        time.sleep(0.002)


def run(conn, url: str) -> None:
    section("queue control: limits that never bind, cancel latency (issue: control)")
    limits_ratio(conn, url)
    cancel_latency(conn, url)
