"""The producer's trace context (the ``otel`` extra), stored with each job at enqueue.

Enqueue stores the current trace context (W3C ``traceparent`` and friends, as
the configured propagator writes them) in the job's ``trace_context``; the
worker's run span attaches to it (``django_workhorse.worker.tracing``).
Without ``opentelemetry-api`` installed nothing here imports it:
``current_context()`` returns None after one cached look-up.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from .conf import installed

_available: bool | None = None


def available() -> bool:
    """Whether ``opentelemetry-api`` is installed (looked up once per process)."""
    global _available
    if _available is None:
        _available = installed("opentelemetry") and installed("opentelemetry.trace")
    return _available


_get_current: Callable[[], Mapping[str, object]] | None = None
"""``opentelemetry.context.get_current``, bound on first use: every enqueue
asks, and the import statements took ~0.3 us of each."""


def current_context() -> dict[str, str] | None:
    """The current trace context as a propagation carrier, or None when there is
    no active span (or no OpenTelemetry). Stored with each job at enqueue."""
    global _get_current
    get_current = _get_current
    if get_current is None:
        if not available():
            return None
        from opentelemetry import context as otel_context

        get_current = _get_current = otel_context.get_current
    # An empty context holds no span and no baggage: there is nothing to
    # propagate, and running the propagators to find that out cost ~3 us of
    # every enqueue (docs/decisions.md, "The single enqueue's own cost").
    if not get_current():
        return None
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier or None


def current_context_json() -> str | None:
    """``current_context()`` as the JSON text an enqueue stores, or None."""
    carrier = current_context()
    return None if carrier is None else json.dumps(carrier)
