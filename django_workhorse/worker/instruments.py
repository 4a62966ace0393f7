"""Tracing and metrics around the worker's runs: the hooks the worker calls.

``configure`` decides once per worker whether anything is on: tracing when
``opentelemetry-api`` is installed and the application has set a tracer
provider, metrics when they were enabled (a metrics port, or
``QUEUE_METRICS_INTERVAL``). With both off ``ACTIVE`` is None and every hook
costs one attribute test: claims are the plain claim, handlers are called as
they are, nothing is imported.
"""

from __future__ import annotations

import time
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

    def claim(self, cursor: Cursor, *args: Any) -> list[store.ClaimedJob]:
        jobs, pickups = store.claim_many_observed(cursor, *args)
        if self.metrics_on:
            for job, pickup in zip(jobs, pickups, strict=True):
                if pickup is not None:
                    metrics.observe_pickup(job.queue, pickup)
        return jobs

    def call(self, running: Running) -> Any:
        job = running.job
        started = time.perf_counter()
        spans, span = self.tracing, None
        try:
            if spans is not None:
                span = spans.start(job, *(job.trace or (None, None)))
            value = _definition(running).func(**job.payload)
        except BaseException as exc:
            if spans is not None and span is not None:
                spans.fail(span, running.context._ended_with or exc)
            raise
        else:
            if spans is not None and span is not None:
                spans.end_of(span, running.context._ended_with)
            return value
        finally:
            if spans is not None and span is not None:
                spans.end(span)
            if self.metrics_on:
                metrics.observe_run(job.queue, job.name, time.perf_counter() - started)

    async def call_async(self, running: Running) -> Any:
        job = running.job
        started = time.perf_counter()
        spans, span = self.tracing, None
        try:
            if spans is not None:
                span = spans.start(job, *(job.trace or (None, None)))
            value = await _definition(running).func(**job.payload)
        except BaseException as exc:
            if spans is not None and span is not None:
                spans.fail(span, running.context._ended_with or exc)
            raise
        else:
            if spans is not None and span is not None:
                spans.end_of(span, running.context._ended_with)
            return value
        finally:
            if spans is not None and span is not None:
                spans.end(span)
            if self.metrics_on:
                metrics.observe_run(job.queue, job.name, time.perf_counter() - started)


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
) -> list[store.ClaimedJob]:
    """The worker's claim: ``store.claim_many``, or its observed form while
    tracing or metrics are on (same jobs, one round trip)."""
    active = ACTIVE
    if active is None:
        return store.claim_many(cursor, worker_id, queues, limits, lease_seconds)
    return active.claim(cursor, worker_id, queues, limits, lease_seconds)


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


def count_successes(successes: Sequence[Finished], succeeded: Sequence[tuple[int, bool]]) -> None:
    """After the writer recorded successes: count them (or their lost leases)."""
    if ACTIVE is None or not ACTIVE.metrics_on:
        return
    for (_job_id, ok), item in zip(succeeded, successes, strict=True):
        job = item.running.job
        metrics.count_finished(job.queue, job.name, "succeeded" if ok else "lost")


def count_failures(failures: Sequence[Failure], failed: Sequence[store.FailResult]) -> None:
    """After the writer recorded failures: count them by outcome."""
    if ACTIVE is None or not ACTIVE.metrics_on:
        return
    for result, failure in zip(failed, failures, strict=True):
        job = failure.item.running.job
        if not result.ok:
            outcome = "lost"
        elif failure.canceled or result.canceled:
            outcome = "canceled"
        else:
            outcome = "retried" if result.will_retry else "failed"
        metrics.count_finished(job.queue, job.name, outcome)
