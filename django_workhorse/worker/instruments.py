"""Tracing and metrics around the worker's runs: the hooks the worker calls.

``configure`` decides once per worker whether anything is on: tracing when
``opentelemetry-api`` is installed and the application has set a tracer
provider, metrics when they were enabled (a metrics port, or
``QUEUE_METRICS_INTERVAL``). With both off ``ACTIVE`` is
None and every hook costs one attribute test: handlers are called as they
are, no extra query is made, nothing is imported.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from .. import metrics, store, tracing
from ..conf import WorkhorseSettings
from ..exceptions import JobCancelled

_INFO_LIMIT = 100_000
"""Claimed-job details kept for runs not started yet; a bound for safety only."""


class Instruments:
    """The switched-on parts, and what the claim told about each job."""

    def __init__(self, settings: WorkhorseSettings, worker_id: str, tracing_on: bool) -> None:
        self.tracing_on = tracing_on
        self.metrics_on = metrics.enabled()
        self.span_name = settings.handler_span_name
        self.linking = settings.trace_linking
        self.worker_id = worker_id
        self.info: dict[int, tuple[Any, datetime | None, datetime | None]] = {}

    def claimed(self, conn, jobs: list[store.ClaimedJob]) -> None:
        if len(self.info) > _INFO_LIMIT:
            self.info.clear()
        with conn.cursor() as cursor:
            rows = store.claimed_info(cursor, [job.job_id for job in jobs])
        queues = {job.job_id: job.queue for job in jobs}
        for job_id, trace_context, created_at, due_at, started_at in rows:
            self.info[job_id] = (trace_context, created_at, started_at)
            if self.metrics_on and due_at is not None and started_at is not None:
                metrics.observe_pickup(queues[job_id], (started_at - due_at).total_seconds())

    def span(self, running):
        job = running.job
        trace_context, created_at, started_at = self.info.pop(job.job_id, (None, None, None))
        return tracing.handler_span(
            span_name=self.span_name.format(name=job.name, queue=job.queue),
            job_id=job.job_id,
            name=job.name,
            queue=job.queue,
            attempt=job.attempt,
            worker_id=self.worker_id,
            trace_context=trace_context,
            linking=self.linking,
            created_at=created_at,
            started_at=started_at,
        )

    def call(self, running) -> Any:
        job = running.job
        started = time.perf_counter()
        try:
            if self.tracing_on:
                with self.span(running):
                    return running.definition.func(**job.payload)
            self.info.pop(job.job_id, None)
            return running.definition.func(**job.payload)
        finally:
            if self.metrics_on:
                metrics.observe_run(job.queue, job.name, time.perf_counter() - started)

    async def call_async(self, running) -> Any:
        job = running.job
        started = time.perf_counter()
        try:
            if self.tracing_on:
                with self.span(running):
                    return await running.definition.func(**job.payload)
            self.info.pop(job.job_id, None)
            return await running.definition.func(**job.payload)
        finally:
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


def on_claimed(conn, jobs: list[store.ClaimedJob]) -> None:
    """After a claim: fetch what tracing and metrics need about the jobs."""
    if ACTIVE is not None and jobs:
        ACTIVE.claimed(conn, jobs)


def call_handler(running) -> Any:
    """Run a sync handler (in a span, timed, when switched on)."""
    active = ACTIVE
    if active is None:
        return running.definition.func(**running.job.payload)
    return active.call(running)


async def await_handler(running) -> Any:
    """Run an async handler (in a span, timed, when switched on)."""
    active = ACTIVE
    if active is None:
        return await running.definition.func(**running.job.payload)
    return await active.call_async(running)


def count_successes(successes, succeeded) -> None:
    """After the writer recorded successes: count them (or their lost leases)."""
    if ACTIVE is None or not ACTIVE.metrics_on:
        return
    for (_job_id, ok), item in zip(succeeded, successes, strict=True):
        job = item.running.job
        metrics.count_finished(job.queue, job.name, "succeeded" if ok else "lost")


def count_failures(failures, failed) -> None:
    """After the writer recorded failures: count them by outcome."""
    if ACTIVE is None or not ACTIVE.metrics_on:
        return
    if failures:
        for result, failure in zip(failed, failures, strict=True):
            job = failure[0].running.job
            if not result.ok:
                outcome = "lost"
            elif isinstance(failure[4], JobCancelled):
                outcome = "canceled"
            else:
                outcome = "retried" if result.will_retry else "failed"
            metrics.count_finished(job.queue, job.name, outcome)
