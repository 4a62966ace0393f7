"""A span per handler run, attached to the producer's span as TRACE_LINKING says
(OpenTelemetry's in-memory exporter; a real worker runs in this process)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest
from django.db import connection
from opentelemetry import baggage, context, trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import django_workhorse as workhorse
from django_workhorse.core.conf import get_settings
from django_workhorse.models import Job
from django_workhorse.worker.worker import Worker, resolve_options
from tests.helpers import poll_until

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "tests.tracing"
EXPORTER = InMemorySpanExporter()
EXPORTED_FROM: list[TracerProvider] = []


class Boom(Exception):
    pass


@workhorse.job(name="tests.tracing.ok", queue=QUEUE)
def ok() -> str:
    return "done"


@workhorse.job(name="tests.tracing.with_child", queue=QUEUE)
def with_child() -> str:
    with trace.get_tracer("tests").start_as_current_span("handler's own"):
        return "done"


@workhorse.job(name="tests.tracing.boom", queue=QUEUE, max_attempts=1)
def boom() -> None:
    raise Boom("it broke")


@workhorse.job(name="tests.tracing.gives_up", queue=QUEUE)
def gives_up() -> None:
    raise workhorse.JobCanceledError("nothing to do")


@workhorse.job(name="tests.tracing.second_time", queue=QUEUE, backoff=workhorse.fixed(0))
def second_time() -> None:
    if workhorse.current_job().attempt == 1:
        raise Boom("first attempt fails")


@workhorse.job(name="tests.tracing.naps", queue=QUEUE)
def naps() -> str:
    workhorse.current_job().sleep("nap", 0)
    return "awake"


@workhorse.job(name="tests.tracing.async_overruns", queue=QUEUE, max_attempts=1, timeout=0.2)
async def async_overruns() -> str:
    await asyncio.sleep(30)
    return "too late"


@workhorse.job(name="tests.tracing.swallows_timeout", queue=QUEUE, max_attempts=1, timeout=0.2)
async def swallows_timeout() -> str:
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        return "kept going"
    return "slept"


@workhorse.job(name="tests.tracing.sync_overruns", queue=QUEUE, max_attempts=1, timeout=0.2)
def sync_overruns() -> str:
    # Returns once the worker recorded its job failed (timed out), 30 s at most.
    job_id = workhorse.current_job().job_id
    deadline = time.monotonic() + 30
    while workhorse.Admin().get_job(job_id).state != "failed" and time.monotonic() < deadline:
        time.sleep(0.02)
    return "too late"


@workhorse.job(name="tests.tracing.awaits_cancel", queue=QUEUE, max_attempts=1)
async def awaits_cancel() -> str:
    await asyncio.sleep(30)
    return "not canceled"


@pytest.fixture(scope="module", autouse=True)
def tracer_provider() -> None:
    """EXPORTER gets the spans of the process's SDK provider: one made here,
    or the one another test module of this process made first (a provider
    can be set once a process)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    if provider not in EXPORTED_FROM:
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        EXPORTED_FROM.append(provider)


@pytest.fixture(autouse=True)
def exporter() -> Iterator[InMemorySpanExporter]:
    EXPORTER.clear()
    yield EXPORTER
    EXPORTER.clear()


def run_worker(**settings) -> None:
    """Run what is due on QUEUE in a burst worker of this process."""
    options = resolve_options(queues=[QUEUE], burst=True, settings=get_settings(settings))
    assert Worker(options).run() == 0


def enqueue_in_span(job, **payload):
    tracer = trace.get_tracer("tests")
    with tracer.start_as_current_span("request") as producer:
        handle = job.enqueue(**payload)
    return handle, producer.get_span_context()


def run_spans(exporter, name: str) -> list:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def test_enqueue_stores_the_current_trace_context():
    handle, producer = enqueue_in_span(ok)

    stored = Job.objects.get(id=handle.id).trace_context

    assert stored["traceparent"].startswith(f"00-{producer.trace_id:032x}-{producer.span_id:016x}-")


def test_enqueue_outside_a_span_stores_none():
    handle = ok.enqueue()

    assert Job.objects.get(id=handle.id).trace_context is None


def test_enqueue_outside_a_span_stores_the_current_baggage():
    token = context.attach(baggage.set_baggage("tenant", "acme"))
    try:
        handle = ok.enqueue()
    finally:
        context.detach(token)

    assert Job.objects.get(id=handle.id).trace_context == {"baggage": "tenant=acme"}


def test_parent_makes_the_run_a_child_of_the_producer_with_the_job_attributes(exporter):
    handle, producer = enqueue_in_span(ok)

    run_worker(TRACE_LINKING="parent")

    [span] = run_spans(exporter, "tests.tracing.ok.run")
    assert span.kind == SpanKind.CONSUMER
    assert span.parent.span_id == producer.span_id
    assert span.context.trace_id == producer.trace_id
    assert list(span.links) == []
    attributes = dict(span.attributes)
    assert attributes["workhorse.job.id"] == handle.id
    assert attributes["workhorse.job.name"] == "tests.tracing.ok"
    assert attributes["workhorse.queue"] == QUEUE
    assert attributes["workhorse.attempt"] == 1
    assert attributes["workhorse.worker.id"].count(":") == 2
    assert attributes["workhorse.outcome"] == "succeeded"


def test_link_starts_a_new_trace_linked_to_the_producer(exporter):
    _, producer = enqueue_in_span(ok)

    run_worker(TRACE_LINKING="link")

    [span] = run_spans(exporter, "tests.tracing.ok.run")
    assert span.parent is None
    assert span.context.trace_id != producer.trace_id
    assert [link.context.span_id for link in span.links] == [producer.span_id]


def test_off_neither_parents_nor_links(exporter):
    _, producer = enqueue_in_span(ok)

    run_worker(TRACE_LINKING="off")

    [span] = run_spans(exporter, "tests.tracing.ok.run")
    assert span.parent is None
    assert span.context.trace_id != producer.trace_id
    assert list(span.links) == []


def test_auto_parents_a_prompt_first_attempt_and_links_a_retry(exporter):
    _, producer = enqueue_in_span(second_time)

    run_worker(TRACE_LINKING="auto")

    first, retry = sorted(
        run_spans(exporter, "tests.tracing.second_time.run"),
        key=lambda s: s.attributes["workhorse.attempt"],
    )
    assert first.parent.span_id == producer.span_id
    assert retry.parent is None
    assert [link.context.span_id for link in retry.links] == [producer.span_id]


def test_auto_links_a_first_attempt_that_starts_over_a_minute_after_its_enqueue(exporter):
    handle, producer = enqueue_in_span(ok)
    with connection.cursor() as cursor:  # as if it had waited in a backlog
        cursor.execute(
            "UPDATE workhorse_job SET created_at = created_at - interval '61 seconds'"
            " WHERE id = %s",
            [handle.id],
        )

    run_worker(TRACE_LINKING="auto")

    [span] = run_spans(exporter, "tests.tracing.ok.run")
    assert span.attributes["workhorse.attempt"] == 1
    assert span.parent is None
    assert span.context.trace_id != producer.trace_id
    assert [link.context.span_id for link in span.links] == [producer.span_id]


def test_parent_keeps_a_retry_a_child_of_the_producer(exporter):
    _, producer = enqueue_in_span(second_time)

    run_worker(TRACE_LINKING="parent")

    spans = run_spans(exporter, "tests.tracing.second_time.run")
    assert sorted(s.attributes["workhorse.attempt"] for s in spans) == [1, 2]
    assert [s.parent.span_id for s in spans] == [producer.span_id] * 2
    assert {s.context.trace_id for s in spans} == {producer.trace_id}
    assert [link for s in spans for link in s.links] == []


def test_a_run_span_carries_the_messaging_attributes(exporter):
    enqueue_in_span(ok)

    run_worker()

    [span] = run_spans(exporter, "tests.tracing.ok.run")
    assert span.attributes["messaging.system"] == "workhorse"
    assert span.attributes["messaging.destination.name"] == QUEUE


def test_a_failing_job_records_the_exception_on_its_span(exporter):
    enqueue_in_span(boom)

    run_worker()

    [span] = run_spans(exporter, "tests.tracing.boom.run")
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes["workhorse.outcome"] == "failed"
    [event] = [e for e in span.events if e.name == "exception"]
    assert event.attributes["exception.type"].endswith("Boom")
    assert event.attributes["exception.message"] == "it broke"


def test_a_cancelled_run_is_marked_canceled_on_its_span(exporter):
    handle, _ = enqueue_in_span(gives_up)

    run_worker()

    [span] = run_spans(exporter, "tests.tracing.gives_up.run")
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes["workhorse.outcome"] == "canceled"
    assert handle.refresh().status == "canceled"


def test_a_run_that_ends_in_a_sleep_is_no_error_on_its_span(exporter):
    enqueue_in_span(naps)

    run_worker()

    spans = run_spans(exporter, "tests.tracing.naps.run")
    assert [s.attributes["workhorse.outcome"] for s in spans] == ["slept", "succeeded"]
    assert {s.status.status_code for s in spans} == {StatusCode.UNSET}
    assert [e for s in spans for e in s.events if e.name == "exception"] == []


def test_handler_span_name_names_the_span(exporter):
    enqueue_in_span(ok)

    run_worker(HANDLER_SPAN_NAME="job {queue}/{name}")

    assert [s.name for s in exporter.get_finished_spans() if s.name.startswith("job ")] == [
        "job tests.tracing/tests.tracing.ok"
    ]


def assert_timed_out(span) -> None:
    assert span.attributes["workhorse.outcome"] == "failed"
    assert span.status.status_code == StatusCode.ERROR
    [event] = [e for e in span.events if e.name == "exception"]
    assert event.attributes["exception.type"].endswith("JobTimeout")


def test_an_async_run_past_its_timeout_is_failed_with_job_timeout_on_its_span(exporter):
    handle, _ = enqueue_in_span(async_overruns)

    run_worker()

    assert handle.refresh().status == "failed"
    [span] = run_spans(exporter, "tests.tracing.async_overruns.run")
    assert_timed_out(span)


def test_an_async_run_that_swallows_its_timeout_is_failed_as_its_span_says(exporter):
    handle, _ = enqueue_in_span(swallows_timeout)

    run_worker()

    assert handle.refresh().status == "failed"
    [span] = run_spans(exporter, "tests.tracing.swallows_timeout.run")
    assert_timed_out(span)


def test_a_sync_run_that_returns_after_its_timeout_is_failed_on_its_span(exporter):
    handle, _ = enqueue_in_span(sync_overruns)

    # The burst worker records the timeout, then waits for the abandoned
    # thread, which returns once it sees its job failed.
    run_worker()

    assert handle.refresh().status == "failed"
    [span] = run_spans(exporter, "tests.tracing.sync_overruns.run")
    assert_timed_out(span)


def test_a_handlers_own_span_is_a_child_of_its_run_span(exporter):
    enqueue_in_span(with_child)

    run_worker()

    [run] = run_spans(exporter, "tests.tracing.with_child.run")
    [own] = run_spans(exporter, "handler's own")
    assert own.parent.span_id == run.context.span_id
    assert own.context.trace_id == run.context.trace_id
    assert run.attributes["workhorse.outcome"] == "succeeded"
    assert run.start_time <= own.start_time <= own.end_time <= run.end_time


def test_a_running_worker_ends_a_succeeded_runs_span_without_stopping(exporter):
    """A worker that keeps running ends each run's span as the run ends, not
    only as the worker stops."""
    options = resolve_options(queues=[QUEUE], burst=False, settings=get_settings({}))
    worker = Worker(options)
    thread = threading.Thread(target=worker.run, name="test-worker", daemon=True)
    thread.start()
    try:
        ok.enqueue()
        worker.wake()
        [span] = poll_until(
            lambda: run_spans(exporter, "tests.tracing.ok.run"),
            timeout=30,
            interval=0.01,
            what="the run's span ended",
        )
        assert thread.is_alive()
        assert span.attributes["workhorse.outcome"] == "succeeded"
    finally:
        worker.request_stop()
        thread.join(30)
    assert not thread.is_alive()


def test_an_operator_cancel_of_a_running_job_is_canceled_with_job_cancelled_on_its_span(
    exporter,
):
    options = resolve_options(queues=[QUEUE], burst=False, settings=get_settings({}))
    worker = Worker(options)
    thread = threading.Thread(target=worker.run, name="test-worker", daemon=True)
    thread.start()
    try:
        handle, _ = enqueue_in_span(awaits_cancel)
        worker.wake()
        poll_until(
            lambda: handle.refresh().status == "active",
            timeout=30,
            interval=0.02,
            what="the run started",
        )
        assert workhorse.Admin().cancel(handle.id).status == "requested"
        [span] = poll_until(
            lambda: run_spans(exporter, "tests.tracing.awaits_cancel.run"),
            timeout=30,
            interval=0.01,
            what="the canceled run's span ended",
        )
    finally:
        worker.request_stop()
        thread.join(30)
    assert not thread.is_alive()
    assert handle.refresh().status == "canceled"
    assert span.attributes["workhorse.outcome"] == "canceled"
    assert span.status.status_code == StatusCode.ERROR
    [event] = [e for e in span.events if e.name == "exception"]
    assert event.attributes["exception.type"].endswith("JobCanceledError")


@pytest.mark.parametrize(
    "stored", ['["traceparent"]', '"00-abc"', '{"traceparent": 5}', '{"traceparent": ["x"]}']
)
def test_a_stored_trace_context_that_is_no_carrier_never_fails_the_run(stored, exporter):
    # Only a writer outside Python (psql, a trigger) can store one.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT job_id FROM workhorse_enqueue_v1('tests.tracing.ok', %s, '{}'::jsonb,"
            " p_trace_context => %s::jsonb)",
            [QUEUE, stored],
        )
        (job_id,) = cursor.fetchone()

    run_worker(TRACE_LINKING="parent")

    snapshot = workhorse.Admin().get_job(job_id)
    assert (snapshot.state, snapshot.current_attempt) == ("succeeded", 1)
    [span] = run_spans(exporter, "tests.tracing.ok.run")
    assert span.parent is None
