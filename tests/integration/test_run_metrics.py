"""What a worker with metrics on records per run, read from prometheus-client's
registry: the finished counters (counted once per batch by the writer), the
run-time histogram of each queue and name, and the pickup histogram."""

from __future__ import annotations

import threading

import pytest
from prometheus_client import REGISTRY

import django_workhorse as workhorse
from django_workhorse.core.conf import get_settings
from django_workhorse.operations import metrics
from django_workhorse.worker.worker import Worker, resolve_options
from tests.helpers import poll_until

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "tests.runmetrics"
OTHER = "tests.runmetrics-other"


class Boom(Exception):
    pass


@workhorse.job(name="tests.runmetrics.ok", queue=QUEUE)
def ok() -> None:
    pass


@workhorse.job(name="tests.runmetrics.also_ok", queue=OTHER)
def also_ok() -> None:
    pass


@workhorse.job(name="tests.runmetrics.boom", queue=QUEUE, max_attempts=1)
def boom() -> None:
    raise Boom("no")


@workhorse.job(name="tests.runmetrics.flaky", queue=QUEUE, backoff=workhorse.fixed(0))
def flaky() -> None:
    if workhorse.current_job().attempt == 1:
        raise Boom("first attempt fails")


def sample(metric: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(metric, labels) or 0.0


def finished(queue: str, job: str, outcome: str) -> float:
    return sample("workhorse_jobs_finished_total", queue=queue, name=job, outcome=outcome)


def runs(queue: str, job: str) -> float:
    return sample("workhorse_job_run_seconds_count", queue=queue, name=job)


def pickups(queue: str) -> float:
    return sample("workhorse_job_pickup_seconds_count", queue=queue)


def snapshot() -> dict[str, float]:
    return {
        "ok": finished(QUEUE, "tests.runmetrics.ok", "succeeded"),
        "also_ok": finished(OTHER, "tests.runmetrics.also_ok", "succeeded"),
        "boom": finished(QUEUE, "tests.runmetrics.boom", "failed"),
        "flaky_retried": finished(QUEUE, "tests.runmetrics.flaky", "retried"),
        "flaky_ok": finished(QUEUE, "tests.runmetrics.flaky", "succeeded"),
        "ok_runs": runs(QUEUE, "tests.runmetrics.ok"),
        "also_ok_runs": runs(OTHER, "tests.runmetrics.also_ok"),
        "flaky_runs": runs(QUEUE, "tests.runmetrics.flaky"),
        "pickups": pickups(QUEUE),
        "other_pickups": pickups(OTHER),
    }


def test_a_batch_of_runs_is_counted_by_queue_name_and_outcome_and_timed_per_run():
    metrics.enable()
    before = snapshot()
    ok.enqueue_many([{}] * 150)
    also_ok.enqueue_many([{}] * 40)
    boom.enqueue()
    flaky.enqueue()

    # Many slots: the writer's batches hold many runs of one queue and name.
    options = resolve_options(
        queues=[QUEUE, OTHER], concurrency=50, burst=True, settings=get_settings({})
    )
    assert Worker(options).run() == 0

    after = snapshot()
    assert {key: after[key] - before[key] for key in after} == {
        "ok": 150,
        "also_ok": 40,
        "boom": 1,
        "flaky_retried": 1,
        "flaky_ok": 1,
        "ok_runs": 150,
        "also_ok_runs": 40,
        "flaky_runs": 2,
        "pickups": 150 + 1 + 2,
        "other_pickups": 40,
    }


def test_a_running_worker_records_run_times_and_pickups_without_stopping():
    """A worker that keeps running records runs, run times and pickups as
    it goes, not only as it stops."""
    metrics.enable()
    before = snapshot()
    options = resolve_options(queues=[QUEUE], burst=False, settings=get_settings({}))
    worker = Worker(options)
    thread = threading.Thread(target=worker.run, name="test-worker", daemon=True)
    thread.start()
    try:
        ok.enqueue_many([{}] * 3)
        worker.wake()
        poll_until(
            lambda: (
                runs(QUEUE, "tests.runmetrics.ok") - before["ok_runs"] == 3
                and pickups(QUEUE) - before["pickups"] == 3
                and finished(QUEUE, "tests.runmetrics.ok", "succeeded") - before["ok"] == 3
            ),
            timeout=30,
            interval=0.01,
            what="three runs timed, picked up and counted",
        )
        assert thread.is_alive()
    finally:
        worker.request_stop()
        thread.join(30)
    assert not thread.is_alive()
