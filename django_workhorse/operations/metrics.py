"""Prometheus metrics (the ``prometheus`` extra, ``prometheus-client``).

Off unless a worker runs with ``runworker --metrics-port N`` or
``QUEUE_METRICS_INTERVAL`` is set; then the worker records:

- ``workhorse_jobs_finished_total{queue, name, outcome}``: runs whose result
  was recorded; outcome is ``succeeded``, ``retried`` (failed, will run
  again), ``failed`` (terminally), ``canceled`` or ``lost`` (the lease was
  lost and the result refused);
- ``workhorse_job_run_seconds{queue, name}``: how long handlers ran;

  a job name no code registers (enqueued from SQL, or by newer code than
  the worker runs) is counted under ``name="(unregistered)"``: one series,
  whatever number of such names a database holds;
- ``workhorse_job_pickup_seconds{queue}``: claimed minus due, on the
  database clock;
- ``workhorse_queue_depth{queue, state}``: live jobs by state, sampled every
  ``QUEUE_METRICS_INTERVAL`` by every worker that has it on (aggregate with
  ``max``).

With ``--processes N`` the children write prometheus-client's multi-process
files and the supervisor serves one merged view (``serve_merged``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..core import registry

if TYPE_CHECKING:
    from .metrics_endpoint import MetricsEndpoint

CHILD_ENV = "WORKHORSE_METRICS_CHILD"
"""Set by a ``--processes`` supervisor that serves the merged metrics: its
children record metrics but serve none."""

UNREGISTERED = "(unregistered)"
"""The ``name`` label of the runs of every job name no code registers: any
client of the database can enqueue any name, and a series per name would be
kept until the worker restarts and served in every scrape."""

RUN_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600)
PICKUP_BUCKETS = (0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


class _Metrics:
    def __init__(self) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        self.finished = Counter(
            "workhorse_jobs_finished",
            "Job runs whose result was recorded, by outcome.",
            ["queue", "name", "outcome"],
        )
        self.run_seconds = Histogram(
            "workhorse_job_run_seconds",
            "How long handlers ran.",
            ["queue", "name"],
            buckets=RUN_BUCKETS,
        )
        self.pickup_seconds = Histogram(
            "workhorse_job_pickup_seconds",
            "Claimed minus due: how long due jobs waited for a worker.",
            ["queue"],
            buckets=PICKUP_BUCKETS,
        )
        self.depth = Gauge(
            "workhorse_queue_depth",
            "Live jobs by queue and state, sampled every QUEUE_METRICS_INTERVAL.",
            ["queue", "state"],
            # live: a --processes supervisor forgets a dead child's samples
            # (child_exited), which a successor that finds a queue empty
            # would never overwrite.
            multiprocess_mode="livemostrecent",
        )
        self.depth_labels: set[tuple[str, str]] = set()
        # Labelled children by label values: .labels() takes a lock and
        # builds a key on every call, the hot path does a dict look-up.
        self.finished_by: dict[tuple[str, str, str], Any] = {}
        self.run_by: dict[tuple[str, str], Any] = {}
        self.pickup_by: dict[str, Any] = {}


_metrics: _Metrics | None = None

_merged_directory: str | None = None
"""The multi-process files' directory, in a supervisor serving the merged view."""


def enable() -> None:
    """Create the metrics in prometheus-client's default registry (once)."""
    global _metrics
    if _metrics is None:
        _metrics = _Metrics()


def enabled() -> bool:
    return _metrics is not None


DEFAULT_ADDR = "127.0.0.1"
"""Where ``runworker --metrics-port`` listens unless ``--metrics-addr`` says
otherwise: this host only, since queue and job names and throughput are
readable by whoever reaches the port."""


def serve(port: int, addr: str = DEFAULT_ADDR) -> MetricsEndpoint:
    """Serve this process's metrics over HTTP on ``addr:port`` (one daemon
    thread, see ``metrics_endpoint``)."""
    from prometheus_client import REGISTRY

    from .metrics_endpoint import MetricsEndpoint

    enable()
    return MetricsEndpoint(addr, port, REGISTRY)


def serve_merged(port: int, addr: str = DEFAULT_ADDR) -> str:
    """In a ``--processes`` supervisor, before its children start: make them
    write multi-process files to a new directory and serve the merged view
    on ``port``. Returns the directory, which is removed when this process
    exits (its children have exited by then)."""
    global _merged_directory
    directory = tempfile.mkdtemp(prefix="workhorse-metrics-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    _merged_directory = directory
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
    os.environ[CHILD_ENV] = "1"
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    from .metrics_endpoint import MetricsEndpoint

    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    MetricsEndpoint(addr, port, registry)
    return directory


def child_exited(pid: int) -> None:
    """In a supervisor serving the merged view: child ``pid`` has exited. Its
    depth samples leave the view (its counts and run times stay in the
    totals), so that what a dead sampler last saw is not served forever."""
    if _merged_directory is None:
        return
    from prometheus_client.multiprocess import mark_process_dead

    mark_process_dead(pid, _merged_directory)  # type: ignore[no-untyped-call]


def start_endpoint(port: int, *, merged: bool, addr: str = DEFAULT_ADDR) -> None:
    """``runworker --metrics-port``: serve this process's metrics on
    ``addr:port``, or (``merged``, in a ``--processes`` supervisor) the merged
    view of its children. A child of such a supervisor only records.
    ImproperlyConfigured without the extra; OSError when it cannot listen."""
    from django.core.exceptions import ImproperlyConfigured

    from ..core.conf import installed

    if not installed("prometheus_client"):
        raise ImproperlyConfigured(
            "metrics need prometheus-client: pip install 'django-workhorse[prometheus]'"
        )
    if merged:
        serve_merged(port, addr)
    elif is_child():
        enable()
    else:
        serve(port, addr)


def is_child() -> bool:
    """Whether this process is a child of a supervisor serving merged metrics."""
    return os.environ.get(CHILD_ENV) == "1"


def _enabled_metrics() -> _Metrics:
    """The metrics of this process; only called once ``enable()`` made them."""
    assert _metrics is not None, "metrics are recorded only once enabled"
    return _metrics


def finished_counter(queue: str, name: str, outcome: str) -> Any:
    """The labelled child of ``workhorse_jobs_finished_total`` (cached)."""
    m = _enabled_metrics()
    key = (queue, name, outcome)
    child = m.finished_by.get(key)
    if child is None:
        # Cached under a registered name only: the cache stays as small as
        # the series are.
        if not registry.is_registered(name):
            key = (queue, UNREGISTERED, outcome)
            child = m.finished_by.get(key)
        if child is None:
            child = m.finished_by[key] = m.finished.labels(*key)
    return child


def run_histogram(queue: str, name: str) -> Any:
    """The labelled child of ``workhorse_job_run_seconds`` (cached); the worker
    keeps it per job kind and calls ``observe`` on it."""
    m = _enabled_metrics()
    key = (queue, name)
    child = m.run_by.get(key)
    if child is None:
        if not registry.is_registered(name):
            key = (queue, UNREGISTERED)
            child = m.run_by.get(key)
        if child is None:
            child = m.run_by[key] = m.run_seconds.labels(*key)
    return child


def pickup_histogram(queue: str) -> Any:
    """The labelled child of ``workhorse_job_pickup_seconds`` (cached)."""
    m = _enabled_metrics()
    child = m.pickup_by.get(queue)
    if child is None:
        child = m.pickup_by[queue] = m.pickup_seconds.labels(queue)
    return child


def count_finished(queue: str, name: str, outcome: str, runs: int = 1) -> None:
    """Count ``runs`` finished runs of one queue, name and outcome (one
    increment however many: the writer counts a batch at once)."""
    finished_counter(queue, name, outcome).inc(runs)


def set_depth(rows: Iterable[tuple[str, str, Any]]) -> None:
    """Set the depth gauge from ``(queue, state, jobs)``; a queue and state seen
    before and absent now drops to 0."""
    m = _enabled_metrics()
    seen = set()
    for queue, state, jobs in rows:
        m.depth.labels(queue, state).set(jobs)
        seen.add((queue, state))
    for queue, state in m.depth_labels - seen:
        m.depth.labels(queue, state).set(0)
    m.depth_labels |= seen


def drop_depth() -> None:
    """This worker no longer samples queue depth (its sampler lost the lock
    with its connection): its endpoint stops serving the gauge, so that the
    values it last sampled do not linger beside the new sampler's. A child of
    a ``--processes`` supervisor cannot take labels out of its multi-process
    file: it sets them to 0, newer than the stale values, and the sampler
    that took over writes newer ones still."""
    m = _metrics
    if m is None:
        return
    if is_child():
        for queue, state in m.depth_labels:
            m.depth.labels(queue, state).set(0)
    else:
        m.depth.clear()
    m.depth_labels = set()
