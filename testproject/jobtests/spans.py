"""A tracer provider whose handler spans are written as JSON lines to a
file, for the test that compares the spans a run opens under ``run_jobs``
and under ``runworker`` (tests/acceptance/test_run_fates.py).

``JOBTESTS_SPANS_FILE`` in a worker's environment installs it as the
worker starts (``JobtestsConfig.ready``); the test's own process calls
``record_to`` for its ``run_jobs``.
"""

from __future__ import annotations

import json
import os
import threading

ENV = "JOBTESTS_SPANS_FILE"
_lock = threading.Lock()


def record_to(path: str) -> None:
    """Append one line per ended handler span to ``path``: the job id, the
    attempt, the span's ``workhorse.outcome`` and status code. The process's
    SDK tracer provider is used, or one is set."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

    class ToFile(SpanProcessor):
        def on_end(self, span) -> None:  # type: ignore[no-untyped-def]
            attributes = span.attributes or {}
            if "workhorse.job.id" not in attributes:
                return
            line = {
                "job_id": attributes["workhorse.job.id"],
                "attempt": attributes.get("workhorse.attempt"),
                "outcome": attributes.get("workhorse.outcome"),
                "status": span.status.status_code.name,
            }
            with _lock, open(path, "a", encoding="utf-8") as out:
                out.write(json.dumps(line) + "\n")

    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(ToFile())


def install_from_environment() -> None:
    path = os.environ.get(ENV)
    if path:
        record_to(path)


def read(path: str, job_id: int) -> list[tuple[int, str, str]]:
    """The spans of ``job_id`` written to ``path``: (attempt, outcome, status)."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as lines:
        spans = [json.loads(line) for line in lines if line.strip()]
    return sorted((s["attempt"], s["outcome"], s["status"]) for s in spans if s["job_id"] == job_id)
