"""Tracing and metrics around the worker's runs: the hooks the worker calls.

``configure`` decides once per worker whether anything is on: tracing when
``opentelemetry-api`` is installed and the application has set a tracer
provider, metrics when they were enabled (a metrics port, or
``QUEUE_METRICS_INTERVAL``). With both off ``ACTIVE`` is None and every hook
costs one attribute test: claims are the plain claim, handlers are called as
they are, nothing is imported.
"""

from __future__ import annotations

import queue
import time
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import metrics, store, tracing
from ..conf import WorkhorseSettings
from ..store import Cursor

if TYPE_CHECKING:
    from ..definitions import JobDefinition
    from .execution import Finished, Running
    from .failures import Failure


class Instruments:
    """The switched-on parts, and what the claim told about each job."""

    def __init__(self, settings: WorkhorseSettings, worker_id: str, tracing_on: bool) -> None:
        self.tracing = tracing.RunSpans(settings, worker_id) if tracing_on else None
        self.metrics_on = metrics.enabled()
        self._timed: queue.SimpleQueue[tuple[str, str, float]] = queue.SimpleQueue()
        """Runs timed by their threads and not yet observed: the writer
        observes them after each batch it writes (``observe_runs``)."""
        # The run-time histogram child of each (queue, name): one dict look-up
        # per run instead of a call through the metrics module.
        self._run_histograms: dict[tuple[str, str], Any] = {}

    def claim(self, cursor: Cursor, *args: Any, flush: bool = True) -> list[store.ClaimedJob]:
        jobs, pickups = store.claim_many_observed(cursor, *args, flush=flush)
        if self.metrics_on and jobs:
            # A claim is mostly one queue: look its histogram up once.
            last_queue: str | None = None
            histogram: Any = None
            for job, pickup in zip(jobs, pickups, strict=True):
                if pickup is None:
                    continue
                if job.queue != last_queue:
                    last_queue, histogram = job.queue, metrics.pickup_histogram(job.queue)
                histogram.observe(pickup if pickup > 0.0 else 0.0)
        return jobs

    def observe_runs(self) -> None:
        """Observe the run times handed over since the last call, on the
        writer's thread: the handler threads only put them on a queue, and
        take no histogram lock on the way from one run to the next."""
        timed, histograms = self._timed, self._run_histograms
        while True:
            try:
                queue_name, name, seconds = timed.get_nowait()
            except queue.Empty:
                return
            key = (queue_name, name)
            histogram = histograms.get(key)
            if histogram is None:
                histogram = histograms[key] = metrics.run_histogram(queue_name, name)
            histogram.observe(seconds)

    def call(self, running: Running) -> Any:
        job = running.job
        spans = self.tracing
        if spans is None:
            started = time.perf_counter()
            try:
                return _definition(running).func(**job.payload)
            finally:
                self._timed.put((job.queue, job.name, time.perf_counter() - started))
        span = spans.start(job, job.trace)
        started = time.perf_counter()
        try:
            value = _definition(running).func(**job.payload)
        except BaseException as exc:
            spans.fail(span, running.context._ended_with or exc)
            raise
        else:
            spans.end_of(span, running.context._ended_with)
            return value
        finally:
            if self.metrics_on:
                self._timed.put((job.queue, job.name, time.perf_counter() - started))
            spans.end(span)

    async def call_async(self, running: Running) -> Any:
        job = running.job
        spans = self.tracing
        if spans is None:
            started = time.perf_counter()
            try:
                return await _definition(running).func(**job.payload)
            finally:
                self._timed.put((job.queue, job.name, time.perf_counter() - started))
        span = spans.start(job, job.trace)
        started = time.perf_counter()
        try:
            value = await _definition(running).func(**job.payload)
        except BaseException as exc:
            spans.fail(span, running.context._ended_with or exc)
            raise
        else:
            spans.end_of(span, running.context._ended_with)
            return value
        finally:
            if self.metrics_on:
                self._timed.put((job.queue, job.name, time.perf_counter() - started))
            spans.end(span)


ACTIVE: Instruments | None = None


def configure(settings: WorkhorseSettings, worker_id: str) -> None:
    """Switch on what is installed and asked for; called once as the worker starts."""
    global ACTIVE
    if settings.queue_metrics_interval is not None:
        metrics.enable()
    tracing_on = tracing.provider_configured()
    ACTIVE = (
        Instruments(settings, worker_id, tracing_on) if tracing_on or metrics.enabled() else None
    )


def claim_many(
    cursor: Cursor,
    worker_id: str,
    queues: Sequence[str],
    limits: Sequence[int],
    lease_seconds: float,
    *,
    flush: bool = True,
) -> list[store.ClaimedJob]:
    """The worker's claim: ``store.claim_many``, or its observed form while
    tracing or metrics are on (same jobs, one round trip)."""
    active = ACTIVE
    if active is None:
        return store.claim_many(cursor, worker_id, queues, limits, lease_seconds, flush=flush)
    return active.claim(cursor, worker_id, queues, limits, lease_seconds, flush=flush)


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


def count_successes(successes: Sequence[Finished], succeeded: Sequence[tuple[int, bool]]) -> None:
    """After the writer recorded successes: count them (or their lost leases),
    one increment per queue, name and outcome of the batch."""
    if ACTIVE is None or not ACTIVE.metrics_on:
        return
    counts: Counter[tuple[str, str, str]] = Counter()
    for (_job_id, ok), item in zip(succeeded, successes, strict=True):
        job = item.running.job
        counts[job.queue, job.name, "succeeded" if ok else "lost"] += 1
    _count(counts)


def count_failures(failures: Sequence[Failure], failed: Sequence[store.FailResult]) -> None:
    """After the writer recorded failures: count them by outcome, one
    increment per queue, name and outcome of the batch."""
    if ACTIVE is None or not ACTIVE.metrics_on:
        return
    counts: Counter[tuple[str, str, str]] = Counter()
    for result, failure in zip(failed, failures, strict=True):
        job = failure.item.running.job
        if not result.ok:
            outcome = "lost"
        elif failure.canceled or result.canceled:
            outcome = "canceled"
        else:
            outcome = "retried" if result.will_retry else "failed"
        counts[job.queue, job.name, outcome] += 1
    _count(counts)


def _count(counts: Counter[tuple[str, str, str]]) -> None:
    for (queue_name, name, outcome), runs in counts.items():
        metrics.count_finished(queue_name, name, outcome, runs)
