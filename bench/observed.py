"""The drain with tracing and metrics on, as a ratio to the plain drain.

Runs in turns (plain, observed, plain, observed, ...) so that both see the
same machine; the ratio of the medians is the figure. "Observed" workers run
with ``--metrics-port`` (counters and histograms recorded, the endpoint
served but not scraped) and an OpenTelemetry SDK tracer provider set
(``WORKHORSE_OTEL_SDK=1`` in testproject's settings; spans recorded, no
exporter), so each run pays for one span and one claimed-info query per
claim batch.
"""

from __future__ import annotations

import os
import socket

from .common import median, report, section
from .worker import drained_span, enqueue_noops, start_worker, wait_drained

TURNS = 3


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def drain_once(conn, url: str, jobs: int, observed: bool, queue: str = "bench") -> float:
    conn.execute("DELETE FROM workhorse_job_runtime WHERE queue = %s", [queue])
    for table in ("workhorse_attempt_history", "workhorse_job_outcome", "workhorse_job_query"):
        conn.execute(
            f"DELETE FROM {table} h USING workhorse_job j WHERE j.id = h.job_id AND j.queue = %s",
            [queue],
        )
    conn.execute("DELETE FROM workhorse_job WHERE queue = %s", [queue])
    enqueue_noops(conn, jobs, queue)
    conn.execute("VACUUM ANALYZE workhorse_job_runtime")
    conn.execute("CHECKPOINT")
    flags = ["--burst", "--queues", queue, "--concurrency", "100"]
    if observed:
        flags += ["--metrics-port", str(free_port())]
        os.environ["WORKHORSE_OTEL_SDK"] = "1"
    try:
        start_worker(url, *flags).wait(600)
    finally:
        os.environ.pop("WORKHORSE_OTEL_SDK", None)
    wait_drained(conn, jobs, queue)
    done, seconds = drained_span(conn, queue)
    return done / seconds


def run(conn, url: str, jobs: int = 20_000) -> None:
    section("drain with tracing and metrics on (issue: tracing, metrics)")
    plain, observed = [], []
    for _ in range(TURNS):
        plain.append(drain_once(conn, url, jobs, observed=False))
        observed.append(drain_once(conn, url, jobs, observed=True))
    spread = (
        f"plain {min(plain):,.0f}-{max(plain):,.0f},"
        f" observed {min(observed):,.0f}-{max(observed):,.0f}"
    )
    report(f"drain {jobs:,} no-op jobs, 1 process, plain", median(plain), "jobs/s", spread)
    report(f"drain {jobs:,} no-op jobs, 1 process, observed", median(observed), "jobs/s")
    report(
        "  observed / plain",
        median(observed) / median(plain),
        "ratio",
        f"target >= 0.9; median of {TURNS} runs each, in turns on a shared, noisy machine",
    )
