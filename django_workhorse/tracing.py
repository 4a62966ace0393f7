"""OpenTelemetry tracing (the ``otel`` extra): the producer's context and the run span.

Only the OpenTelemetry *API* is used; the application configures the SDK and
exporters as it likes. Without ``opentelemetry-api`` installed nothing here
imports it: ``current_context()`` returns None after one cached look-up and
the worker runs handlers without a span.

- Enqueue stores the current trace context (W3C ``traceparent`` and friends,
  as the configured propagator writes them) in the job's ``trace_context``.
- Each handler run is a span named by ``HANDLER_SPAN_NAME``; ``TRACE_LINKING``
  says how it attaches to the producer's span (``link_mode``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from .conf import installed
from .exceptions import JobCancelled

AUTO_PARENT_WINDOW = 60.0
"""With ``TRACE_LINKING = "auto"``, a first attempt that started at most this
many seconds after its enqueue is a child of the producer's span; a later or
retried run gets a link instead (its trace would otherwise stretch over
minutes or hours of idle time, or show one request "doing" several runs)."""

_available: bool | None = None


def available() -> bool:
    """Whether ``opentelemetry-api`` is installed (looked up once per process)."""
    global _available
    if _available is None:
        _available = installed("opentelemetry") and installed("opentelemetry.trace")
    return _available


def provider_configured() -> bool:
    """Whether the application has set a tracer provider (an SDK). Until it
    does, the API's spans record nothing, so the worker does not make them."""
    if not available():
        return False
    from opentelemetry import trace

    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def current_context() -> dict[str, str] | None:
    """The current trace context as a propagation carrier, or None when there is
    no active span (or no OpenTelemetry). Stored with each job at enqueue."""
    if not available():
        return None
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier or None


def link_mode(
    setting: str, attempt: int, created_at: datetime | None, started_at: datetime | None
) -> str:
    """How the run span attaches to the producer's: 'parent', 'link' or 'off'.

    ``auto`` is 'parent' for a first attempt picked up within
    AUTO_PARENT_WINDOW seconds of its enqueue, 'link' otherwise.
    """
    if setting in ("off", "none"):
        return "off"
    if setting in ("parent", "link"):
        return setting
    if attempt > 1:
        return "link"
    late = (
        created_at is not None
        and started_at is not None
        and (started_at - created_at).total_seconds() > AUTO_PARENT_WINDOW
    )
    return "link" if late else "parent"


@contextmanager
def handler_span(
    *,
    span_name: str,
    job_id: int,
    name: str,
    queue: str,
    attempt: int,
    worker_id: str,
    trace_context: Mapping[str, str] | None,
    linking: str,
    created_at: datetime | None = None,
    started_at: datetime | None = None,
) -> Iterator[Any]:
    """A span around one handler run, current while the handler runs.

    A failure is recorded on the span (exception event, status ERROR); a
    cancel as well, with ``workhorse.outcome = "canceled"``.
    """
    from opentelemetry import context as otel_context
    from opentelemetry import propagate, trace

    tracer = trace.get_tracer("django_workhorse")
    mode = link_mode(linking, attempt, created_at, started_at)
    parent = otel_context.Context()  # a new trace unless the producer is the parent
    links = []
    if trace_context and mode != "off":
        producer_context = propagate.extract(dict(trace_context))
        producer = trace.get_current_span(producer_context).get_span_context()
        if producer.is_valid:
            if mode == "parent":
                parent = producer_context
            else:
                links.append(trace.Link(producer, {"workhorse.link": "producer"}))
    attributes = {
        "workhorse.job.id": job_id,
        "workhorse.job.name": name,
        "workhorse.queue": queue,
        "workhorse.attempt": attempt,
        "workhorse.worker.id": worker_id,
        "messaging.system": "workhorse",
        "messaging.destination.name": queue,
    }
    with tracer.start_as_current_span(
        span_name,
        context=parent,
        kind=trace.SpanKind.CONSUMER,
        attributes=attributes,
        links=links,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except BaseException as exc:
            canceled = isinstance(exc, JobCancelled | asyncio.CancelledError)
            span.set_attribute("workhorse.outcome", "canceled" if canceled else "failed")
            span.record_exception(exc)
            span.set_status(trace.Status(trace.StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
            raise
        span.set_attribute("workhorse.outcome", "succeeded")
