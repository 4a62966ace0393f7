"""The queue-depth sampler (docs/observability.md): every worker with it on sets the
gauge from one count of the live rows, holding nothing between two samples."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from jobtests.jobs import record
from prometheus_client import REGISTRY

from django_workhorse.operations import metrics
from django_workhorse.worker.sidecars import DepthSampler

pytestmark = pytest.mark.django_db(transaction=True)


def depth(queue: str, state: str) -> float | None:
    return REGISTRY.get_sample_value("workhorse_queue_depth", {"queue": queue, "state": state})


def test_a_sampler_sets_the_depth_gauge_from_the_live_rows(wait_until):
    metrics.enable()
    record.options(delay=timedelta(hours=1)).enqueue_many([{"label": "x"}] * 2)
    sampler = DepthSampler("default", 0.05)
    sampler.start()
    try:
        wait_until(lambda: depth("jobtests.record", "scheduled") == 2, timeout=10)
    finally:
        sampler.stop()


def test_samplers_leave_no_advisory_lock_behind(wait_until):
    """Every worker samples: nothing is held between two samples, on any
    connection (a pooled server connection would keep it for the next client)."""
    metrics.enable()
    record.options(delay=timedelta(hours=1)).enqueue_many([{"label": "x"}] * 2)
    samplers = [DepthSampler("default", 0.05) for _ in range(3)]
    for sampler in samplers:
        sampler.start()
    try:
        wait_until(lambda: depth("jobtests.record", "scheduled") == 2, timeout=10)
        with connection.cursor() as cursor:
            # This database's: another test process runs on a database of its own.
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            )
            assert cursor.fetchone()[0] == 0
    finally:
        for sampler in samplers:
            sampler.stop()


def test_a_queue_that_empties_drops_to_zero():
    metrics.enable()
    metrics.set_depth([("q1", "ready", 4)])

    metrics.set_depth([])

    assert depth("q1", "ready") == 0
