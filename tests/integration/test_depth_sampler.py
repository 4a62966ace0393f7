"""One worker of a fleet samples queue depth at a time; another takes over when it stops."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from jobtests.jobs import record
from prometheus_client import REGISTRY

from django_workhorse import metrics, store
from django_workhorse.worker.sidecars import DepthSampler

pytestmark = pytest.mark.django_db(transaction=True)


def depth(queue: str, state: str) -> float | None:
    return REGISTRY.get_sample_value("workhorse_queue_depth", {"queue": queue, "state": state})


def test_one_sampler_holds_the_lock_and_another_takes_over_when_it_stops(wait_until):
    metrics.enable()
    record.options(delay=timedelta(hours=1)).enqueue_many([{"label": "x"}] * 2)
    samplers = [DepthSampler("default", 0.05) for _ in range(3)]
    for sampler in samplers:
        sampler.start()
    try:
        wait_until(lambda: any(s.holder for s in samplers), timeout=10)
        wait_until(lambda: depth("jobtests.record", "scheduled") == 2, timeout=10)
        [holder] = [s for s in samplers if s.holder]

        holder.stop()

        wait_until(lambda: any(s.holder for s in samplers if s is not holder), timeout=10)
        assert sum(s.holder for s in samplers if s is not holder) == 1
    finally:
        for sampler in samplers:
            sampler.stop()


def test_a_queue_that_empties_drops_to_zero():
    metrics.enable()
    metrics.set_depth([("q1", "ready", 4)])

    metrics.set_depth([])

    assert depth("q1", "ready") == 0


def test_a_sampler_that_lost_the_lock_to_another_worker_no_longer_serves_the_gauge(wait_until):
    metrics.enable()
    record.options(delay=timedelta(hours=1)).enqueue_many([{"label": "x"}] * 2)
    sampler = DepthSampler("default", 0.3)
    sampler.start()
    try:
        wait_until(lambda: depth("jobtests.record", "scheduled") == 2, timeout=10)
        with connection.cursor() as cursor:
            # Its connection drops (a network blip, a restarted pooler) and
            # another worker takes the lock before this one reconnects.
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND application_name = %s",
                [sampler.name],
            )
            wait_until(lambda: store.try_depth_sampler_lock(cursor), timeout=10)
            try:
                # the gauge leaves the endpoint of the worker that no longer samples
                wait_until(lambda: depth("jobtests.record", "scheduled") is None, timeout=10)
                assert not sampler.holder
            finally:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [store.QUEUE_DEPTH_LOCK])
    finally:
        sampler.stop()
