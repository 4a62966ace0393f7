"""The drain with tracing and metrics on, as a ratio to the plain drain.

Runs in turns (plain, observed, tracing only, metrics only, then the next
turn in the reverse order) so that all see the same machine; the ratio of the
medians is the figure. "Observed" workers run with ``--metrics-port``
(counters and histograms recorded, the endpoint served but not scraped) and
an OpenTelemetry SDK tracer provider set (``WORKHORSE_OTEL_SDK=1`` in
testproject's settings; every span recorded, no exporter, no sampler), so
each run pays for one span and the claim for two primary-key probes per job.
The tracing-only and metrics-only drains show which part costs what.

One more line, labelled as such and not the issue's figure: the observed
drain with a sampler that records one root span in ten
(``ParentBased(TraceIdRatioBased(0.1))``, ``WORKHORSE_OTEL_SAMPLE=0.1``), as
a project that samples would run it.
"""

from __future__ import annotations

import os
import resource
import socket
import time

from .common import median, report, section
from .worker import drained_span, enqueue_noops, start_worker, wait_drained

TURNS = 5
MODES = ("plain", "observed", "tracing", "metrics", "sampled")
METRICS_MODES = ("observed", "metrics", "sampled")
SAMPLED_RATIO = 0.1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def drain_once(conn, url: str, jobs: int, mode: str, queue: str = "bench") -> tuple[float, float]:
    """Drain ``jobs`` no-op jobs with one burst worker; ``mode`` is one of MODES.
    The rate, and the worker's CPU per job in microseconds (its start-up
    included, a failed start too): steadier than the rate on a shared machine."""
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
    if mode in ("observed", "tracing", "sampled"):
        os.environ["WORKHORSE_OTEL_SDK"] = "1"
    if mode == "sampled":
        os.environ["WORKHORSE_OTEL_SAMPLE"] = str(SAMPLED_RATIO)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        # A worker that could not start (a server shared with other benchmarks
        # out of connections, a port taken meanwhile) is started again.
        for attempt in range(5):
            port = ["--metrics-port", str(free_port())] if mode in METRICS_MODES else []
            code = start_worker(url, *flags, *port).wait(600)
            if code == 0:
                break
            time.sleep(1 + attempt)
        else:
            raise RuntimeError(f"the {mode} worker failed five times (exit code {code})")
    finally:
        os.environ.pop("WORKHORSE_OTEL_SDK", None)
        os.environ.pop("WORKHORSE_OTEL_SAMPLE", None)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wait_drained(conn, jobs, queue)
    done, seconds = drained_span(conn, queue)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return done / seconds, cpu / done * 1e6


def run(conn, url: str, jobs: int = 20_000, turns: int = TURNS) -> None:
    section("drain with tracing and metrics on (issue: tracing, metrics)")
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpus: dict[str, list[float]] = {mode: [] for mode in MODES}
    for turn in range(turns):
        for mode in MODES if turn % 2 == 0 else MODES[::-1]:
            rate, cpu = drain_once(conn, url, jobs, mode)
            rates[mode].append(rate)
            cpus[mode].append(cpu)
    plain = median(rates["plain"])

    def runs(mode: str) -> str:
        """The spread of a mode's rates, its turn-by-turn ratios to plain, its CPU."""
        ratios = sorted(r / p for r, p in zip(rates[mode], rates["plain"], strict=True))
        return (
            f"runs {min(rates[mode]):,.0f}-{max(rates[mode]):,.0f} jobs/s, turn by turn"
            f" {ratios[0]:.2f}-{ratios[-1]:.2f}; worker CPU {median(cpus[mode]):.1f} us a job"
        )

    report(
        f"drain {jobs:,} no-op jobs, 1 process, plain",
        plain,
        "jobs/s",
        f"runs {min(rates['plain']):,.0f}-{max(rates['plain']):,.0f}; worker CPU"
        f" {median(cpus['plain']):.1f} us a job (start-up included)",
    )
    for mode, label in (("tracing", "tracing only"), ("metrics", "metrics only")):
        report(f"  {label} / plain", median(rates[mode]) / plain, "ratio", runs(mode))
    observed = rates["observed"]
    report(
        f"drain {jobs:,} no-op jobs, 1 process, observed",
        median(observed),
        "jobs/s",
        f"runs {min(observed):,.0f}-{max(observed):,.0f}",
    )
    report(
        "  observed / plain",
        median(observed) / plain,
        "ratio",
        f"target >= 0.9; medians of {turns} runs each, in turns on a shared, noisy"
        f" machine; {runs('observed')}",
    )
    report(
        f"  (extra) observed, 1 root span in {round(1 / SAMPLED_RATIO)} sampled / plain",
        median(rates["sampled"]) / plain,
        "ratio",
        f"not the target's figure; {runs('sampled')}",
    )
