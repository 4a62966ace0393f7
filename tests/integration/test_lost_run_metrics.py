"""``workhorse_jobs_finished_total{outcome="lost"}`` (docs/observability.md):
a run whose lease was taken from it while its handler ran, and whose result
the database therefore refused, is counted as lost, not as succeeded."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from prometheus_client import REGISTRY

import django_workhorse as workhorse
from django_workhorse.core.conf import get_settings
from django_workhorse.operations import metrics
from django_workhorse.worker.worker import Worker, resolve_options

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "tests.lostmetrics"
NAME = "tests.lostmetrics.stolen"
STOLEN: list[int] = []


@workhorse.job(name=NAME, queue=QUEUE)
def stolen() -> str:
    """Its first run loses its lease (as to a worker that froze past it):
    the lease is expired, the worker's liveness proof ended with its LISTEN
    session (docs/worker.md#liveness), and the job recovered from under it."""
    ctx = workhorse.current_job()
    if ctx.job_id not in STOLEN:
        STOLEN.append(ctx.job_id)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE workhorse_job_runtime SET lease_expires_at = now() - interval '1 second'"
                " WHERE job_id = %s",
                [ctx.job_id],
            )
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database()"
                " AND application_name LIKE 'workhorse-listener %%'"
            )
            for _ in range(500):  # the ended session leaves pg_stat_activity soon after
                cursor.execute("SELECT cardinality(workhorse_live_workers_v1())")
                if cursor.fetchone()[0] == 0:
                    break
                time.sleep(0.01)
            cursor.execute("SELECT count(*) FROM workhorse_recover_stalled_v1(10)")
    return "done"


def finished(outcome: str) -> float:
    labels = {"queue": QUEUE, "name": NAME, "outcome": outcome}
    return REGISTRY.get_sample_value("workhorse_jobs_finished_total", labels) or 0.0


def test_a_run_whose_result_is_refused_is_counted_lost_and_its_rerun_succeeded():
    metrics.enable()
    lost, succeeded = finished("lost"), finished("succeeded")
    handle = stolen.enqueue()

    options = resolve_options(queues=[QUEUE], burst=True, settings=get_settings({}))
    assert Worker(options).run() == 0

    assert handle.refresh().status == "succeeded"  # by the run after the recovery
    assert (finished("lost") - lost, finished("succeeded") - succeeded) == (1, 1)
