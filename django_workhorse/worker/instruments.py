"""Tracing and metrics around the worker's runs: the hooks the worker calls.

``configure`` decides once per worker whether anything is on: tracing when
``opentelemetry-api`` is installed and the application has set a tracer
provider, metrics when they were enabled (a metrics port, or
``QUEUE_METRICS_INTERVAL``). With both off ``ACTIVE`` is None and every hook
costs one attribute test: handlers are called as they are, nothing is
imported. What they need about each claimed job (its trace context, how
long it waited, its pickup) comes in the claim's own rows, whatever is on:
switching them on changes no SQL the worker calls, neither the claim nor the
route a result takes to the database.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core.conf import WorkhorseSettings
from ..db import store
from ..operations import metrics
from . import tracing

logger = logging.getLogger("django_workhorse.worker")

if TYPE_CHECKING:
    from ..core.definitions import JobDefinition
    from .executor import Closing, Running


class Instruments:
    """The switched-on parts, and what the claim told about each job."""

    def __init__(
        self,
        settings: WorkhorseSettings,
        worker_id: str,
        tracing_on: bool,
        *,
        metrics_on: bool | None = None,
    ) -> None:
        self.tracing = tracing.RunSpans(settings, worker_id) if tracing_on else None
        self.metrics_on = metrics.enabled() if metrics_on is None else metrics_on
        self._timed: queue.SimpleQueue[tuple[str, str, float]] = queue.SimpleQueue()
        """Runs timed by their threads and not yet observed: whoever writes
        their results observes them after each write (``observe_runs``: the
        writer after a batch, the claim loop or a carrying handler thread
        after a claim that wrote successes)."""
        # The run-time histogram child of each (queue, name): one dict look-up
        # per run instead of a call through the metrics module.
        self._run_histograms: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def observe_claimed(self, jobs: Sequence[store.ClaimedJob]) -> None:
        """Observe the pickups of jobs just claimed (metrics on): each claim
        row carries its own (``workhorse_claim_many_v1``)."""
        if not self.metrics_on or not jobs:
            return
        # Observed per claim, not per job: a claim is mostly one queue.
        by_queue: dict[str, list[float]] = {}
        for job in jobs:
            pickup = job.pickup
            if pickup is not None:
                by_queue.setdefault(job.queue, []).append(pickup if pickup > 0.0 else 0.0)
        for queue_name, seconds in by_queue.items():
            observe_many(metrics.pickup_histogram(queue_name), seconds)

    def observe_runs(self) -> None:
        """Observe the run times handed over since the last call, once
        their results are written (by the writer, or with a claim): the
        handler threads only put them on a queue, and take no histogram lock
        on the way from one run to the next."""
        with self._lock:  # the writer's thread, and the thread that wrote with a claim
            self._observe_timed()

    def _observe_timed(self) -> None:
        timed, histograms = self._timed, self._run_histograms
        batch: dict[tuple[str, str], list[float]] = {}
        while True:
            try:
                queue_name, name, seconds = timed.get_nowait()
            except queue.Empty:
                break
            batch.setdefault((queue_name, name), []).append(seconds)
        for key, values in batch.items():
            histogram = histograms.get(key)
            if histogram is None:
                histogram = histograms[key] = metrics.run_histogram(*key)
            observe_many(histogram, values)

    def call(self, running: Running) -> Any:
        if self.tracing is not None:
            with _Traced(self, running):
                return _definition(running).func(**running.job.payload)
        started = time.perf_counter()
        try:
            return _definition(running).func(**running.job.payload)
        finally:
            self._ran(running.job, started)

    async def call_async(self, running: Running) -> Any:
        if self.tracing is not None:
            with _Traced(self, running):
                return await _definition(running).func(**running.job.payload)
        started = time.perf_counter()
        try:
            return await _definition(running).func(**running.job.payload)
        finally:
            self._ran(running.job, started)

    def _ran(self, job: store.ClaimedJob, started: float) -> None:
        """Hand a run's time to whoever writes its result (metrics only, no
        span): ``observe_runs``."""
        self._timed.put((job.queue, job.name, time.perf_counter() - started))


class _Traced:
    """One handler call in its span (tracing on), timed too (metrics on), the
    same around a sync and an async handler. The run time covers the handler
    alone, from after its span's start to before its span's end."""

    __slots__ = ("instruments", "running", "span", "spans", "started")

    def __init__(self, instruments: Instruments, running: Running) -> None:
        assert instruments.tracing is not None, "a traced call needs tracing on"
        self.instruments = instruments
        self.running = running
        self.spans = instruments.tracing
        self.span = self.spans.start(running.job, running.job.trace)
        self.started = time.perf_counter()

    def __enter__(self) -> None:
        pass

    def __exit__(self, _type: object, exc: BaseException | None, _tb: object) -> None:
        seconds = time.perf_counter() - self.started
        instruments, job = self.instruments, self.running.job
        if instruments.metrics_on:
            instruments._timed.put((job.queue, job.name, seconds))
        spans, span = self.spans, self.span
        ended_with = self.running.context._ended_with
        if exc is None:
            spans.end_of(span, ended_with)
        else:
            spans.fail(span, ended_with or exc)
        spans.end(span)


def observe_many(histogram: Any, values: Sequence[float]) -> None:
    """Observe ``values`` in ``histogram`` with one increment of its sum and
    one of each bucket they fall in, not one of each per value.

    Each ``observe`` takes the child's lock and increments a bucket and the
    sum; in multiprocess mode (the children of ``--processes``) each
    increment is a write to a memory-mapped file. Observed one at a time,
    a job's run time, pickup and count cost ~12 us in a child (~2.5 us an
    observation in one process, ~4.7 in a child, measured on the shared
    2-core machine); a batch costs one increment per bucket hit, and the
    per-job part is a ``bisect``. A histogram without the parts this relies
    on (another ``prometheus_client``) is observed value by value.
    """
    bounds = getattr(histogram, "_upper_bounds", None)
    buckets = getattr(histogram, "_buckets", None)
    total = getattr(histogram, "_sum", None)
    if bounds is None or buckets is None or total is None or len(values) == 1:
        for value in values:
            histogram.observe(value)
        return
    # The first bucket whose upper bound is at least the value, as observe()
    # picks it; the last bound is +Inf.
    counts = Counter(bisect_left(bounds, value) for value in values)
    total.inc(math.fsum(values))
    for index, count in counts.items():
        buckets[min(index, len(buckets) - 1)].inc(count)


ACTIVE: Instruments | None = None
"""The switch: what is on in this process, set by ``configure`` as the worker
starts (under ``_lock``, tests/unit/test_lock_rule.py) and only read after.
The hooks read it once per call, so a call sees one value throughout."""
_lock = threading.Lock()


def configure(settings: WorkhorseSettings, worker_id: str) -> None:
    """Switch on what is installed and asked for; called once as the worker starts."""
    global ACTIVE
    if settings.queue_metrics_interval is not None:
        metrics.enable()
    tracing_on = tracing.provider_configured()
    active = (
        Instruments(settings, worker_id, tracing_on) if tracing_on or metrics.enabled() else None
    )
    with _lock:
        ACTIVE = active


def tracing_only(settings: WorkhorseSettings, worker_id: str) -> Instruments | None:
    """For ``run_jobs``, in a process where no worker configured anything:
    a span per run when the application has set a tracer provider (as a
    worker would open), no metrics (nothing serves them); None otherwise."""
    if not tracing.provider_configured():
        return None
    return Instruments(settings, worker_id, True, metrics_on=False)


def observe_claimed(jobs: Sequence[store.ClaimedJob]) -> None:
    """After any claim: observe what metrics need about the jobs, read from
    the claim's own rows (no query). Tracing reads each job's ``trace`` as
    its run starts. With both off, one attribute test."""
    active = ACTIVE
    if active is not None:
        active.observe_claimed(jobs)


def _definition(running: Running) -> JobDefinition[..., Any]:
    assert running.definition is not None, "only runs of a registered job reach a handler"
    return running.definition


def call_handler(running: Running) -> Any:
    """Run a sync handler (in a span, timed, when switched on)."""
    active = ACTIVE
    if active is None:
        return _definition(running).func(**running.job.payload)
    return active.call(running)


async def await_handler(running: Running) -> Any:
    """Run an async handler (in a span, timed, when switched on)."""
    active = ACTIVE
    if active is None:
        return await _definition(running).func(**running.job.payload)
    return await active.call_async(running)


def observe_runs() -> None:
    """After the writer wrote a batch (and as it stops): observe the run
    times the handler threads handed over."""
    if ACTIVE is not None and ACTIVE.metrics_on:
        ACTIVE.observe_runs()


def count_successes(successes: Sequence[Closing], succeeded: Sequence[tuple[int, bool]]) -> None:
    """After the writer recorded successes: count them (or their lost leases),
    one increment per queue, name and outcome of the batch."""
    if ACTIVE is None or not ACTIVE.metrics_on:
        return
    counts: Counter[tuple[str, str, str]] = Counter()
    for (_job_id, ok), item in zip(succeeded, successes, strict=True):
        job = item.running.job
        counts[job.queue, job.name, "succeeded" if ok else "lost"] += 1
    _count(counts)


def count_failures(failures: Sequence[Closing], failed: Sequence[store.FailResult]) -> None:
    """After the writer recorded failures: count them by outcome, one
    increment per queue, name and outcome of the batch."""
    if ACTIVE is None or not ACTIVE.metrics_on:
        return
    counts: Counter[tuple[str, str, str]] = Counter()
    for result, closing in zip(failed, failures, strict=True):
        job = closing.running.job
        if not result.ok:
            outcome = "lost"
        elif closing.outcome == "canceled" or result.canceled:
            outcome = "canceled"
        else:
            outcome = "retried" if result.will_retry else "failed"
        counts[job.queue, job.name, outcome] += 1
    _count(counts)


def _count(counts: Counter[tuple[str, str, str]]) -> None:
    for (queue_name, name, outcome), runs in counts.items():
        metrics.count_finished(queue_name, name, outcome, runs)
