"""OpenTelemetry tracing (the ``otel`` extra): the span of each handler run.

Only the OpenTelemetry *API* is used; the application configures the SDK and
exporters as it likes. Without ``opentelemetry-api`` installed, or without a
tracer provider, the worker runs handlers without a span.

Each handler run is a span named by ``HANDLER_SPAN_NAME``; ``TRACE_LINKING``
says how it attaches to the producer's span (``link_mode``), whose context
the enqueue stored (``django_workhorse.core.trace_context``).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from typing import Any

from ..context import SleepRequested
from ..exceptions import JobCanceledError

AUTO_PARENT_WINDOW = 60.0
"""With ``TRACE_LINKING = "auto"``, a first attempt that started at most this
many seconds after its enqueue is a child of the producer's span; a later or
retried run gets a link instead (its trace would otherwise stretch over
minutes or hours of idle time, or show one request "doing" several runs)."""


def provider_configured() -> bool:
    """Whether the application has set a tracer provider (an SDK). Until it
    does, the API's spans record nothing, so the worker does not make them.
    An application that set one has imported ``opentelemetry.trace``; this
    imports nothing."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return False
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def link_mode(setting: str, attempt: int, waited: float | None) -> str:
    """How the run span attaches to the producer's: 'parent', 'link' or 'off'.

    ``auto`` is 'parent' for a first attempt that started at most
    AUTO_PARENT_WINDOW seconds after its enqueue (``waited``), 'link' otherwise.
    """
    if setting in ("off", "none"):
        return "off"
    if setting in ("parent", "link"):
        return setting
    if attempt > 1 or (waited is not None and waited > AUTO_PARENT_WINDOW):
        return "link"
    return "parent"


class RunSpans:
    """Starts and ends the span of each handler run of one worker.

    The span is current while the handler runs (its own spans are children).
    A failure is recorded on it (an exception event, status ERROR); a cancel
    as well, with ``workhorse.outcome = "canceled"``. When the worker recorded
    the run's end while the handler ran (a timeout, an acked cancel: the mark
    on its context), the span says that end, whatever the handler did after.
    """

    def __init__(self, settings: Any, worker_id: str) -> None:
        from opentelemetry import context, propagate, trace

        self._trace, self._propagate = trace, propagate
        self.tracer = trace.get_tracer("django_workhorse")
        self.span_name = settings.handler_span_name
        self.linking = settings.trace_linking
        self.worker_id = worker_id
        self._names: dict[tuple[str, str], str] = {}
        # Bound once: the per-run path makes no module attribute look-ups.
        self._start_span = self.tracer.start_span
        self._in_context = trace.set_span_in_context
        self._attach, self._detach = context.attach, context.detach
        self._consumer = trace.SpanKind.CONSUMER
        self._new_trace = context.Context()  # empty, immutable: no parent

    def start(
        self, job: Any, trace: tuple[Mapping[str, str] | None, float | None] | None
    ) -> tuple[Any, Any]:
        """Start and make current the span of ``job``'s run; pass the result to
        ``end``. ``trace`` is the claim's ``(stored trace context, seconds
        since enqueue)`` for the job."""
        parent = self._new_trace  # a new trace unless the producer is the parent
        links: tuple[Any, ...] = ()
        if trace is not None and trace[0]:
            mode = link_mode(self.linking, job.attempt, trace[1])
            if mode != "off":
                producer_context = self._propagate.extract(trace[0])
                producer = self._trace.get_current_span(producer_context).get_span_context()
                if producer.is_valid:
                    if mode == "parent":
                        parent = producer_context
                    else:
                        links = (self._trace.Link(producer, {"workhorse.link": "producer"}),)
        key = (job.name, job.queue)
        name = self._names.get(key)
        if name is None:
            name = self._names[key] = self.span_name.format(name=job.name, queue=job.queue)
        span = self._start_span(
            name,
            parent,
            self._consumer,
            {
                "workhorse.job.id": job.job_id,
                "workhorse.job.name": job.name,
                "workhorse.queue": job.queue,
                "workhorse.attempt": job.attempt,
                "workhorse.worker.id": self.worker_id,
                "messaging.system": "workhorse",
                "messaging.destination.name": job.queue,
            },
            links,
        )
        return span, self._attach(self._in_context(span))

    def succeed(self, started: tuple[Any, Any]) -> None:
        started[0].set_attribute("workhorse.outcome", "succeeded")

    def end_of(self, started: tuple[Any, Any], recorded: BaseException | None) -> None:
        """The handler returned: succeeded, unless the worker had already
        recorded another end for the run (``recorded``: a timeout, a cancel)."""
        if recorded is None:
            self.succeed(started)
        else:
            self.fail(started, recorded)

    def fail(self, started: tuple[Any, Any], exc: BaseException) -> None:
        span = started[0]
        if isinstance(exc, SleepRequested):  # the run ended in ctx.sleep: no error
            span.set_attribute("workhorse.outcome", "slept")
            return
        canceled = isinstance(exc, JobCanceledError | asyncio.CancelledError)
        span.set_attribute("workhorse.outcome", "canceled" if canceled else "failed")
        span.record_exception(exc)
        span.set_status(
            self._trace.Status(self._trace.StatusCode.ERROR, f"{type(exc).__name__}: {exc}")
        )

    def end(self, started: tuple[Any, Any]) -> None:
        span, token = started
        self._detach(token)
        span.end()
