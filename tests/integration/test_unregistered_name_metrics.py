"""Job names no code registers share one metrics series (docs/observability.md,
"Metrics"): any client of the database can enqueue any name, and a series per
name would be kept until the worker restarts and served in every scrape."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

import django_workhorse as workhorse
from django_workhorse.core.conf import get_settings
from django_workhorse.operations import metrics
from django_workhorse.worker.worker import Worker, resolve_options

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "tests.unregistered-metrics"


@workhorse.job(name="tests.unregistered_metrics.known", queue=QUEUE)
def known() -> None:
    pass


def series(metric: str) -> dict[tuple[str, str], float]:
    """``{(name, outcome or ''): value}`` of one metric's samples for QUEUE."""
    found = {}
    for family in REGISTRY.collect():
        for sample in family.samples:
            if sample.name == metric and sample.labels.get("queue") == QUEUE:
                found[sample.labels["name"], sample.labels.get("outcome", "")] = sample.value
    return found


def test_three_thousand_unregistered_names_add_one_series(cursor):
    metrics.enable()
    cursor.execute(
        "SELECT count(*) FROM generate_series(1, 3000) g,"
        " LATERAL workhorse_enqueue_v1('sql-only-' || g, %s, '{}', 1)",
        [QUEUE],
    )
    known.enqueue()
    options = resolve_options(queues=[QUEUE], concurrency=20, burst=True, settings=get_settings({}))

    assert Worker(options).run() == 0

    assert series("workhorse_jobs_finished_total") == {
        ("(unregistered)", "failed"): 3000,
        ("tests.unregistered_metrics.known", "succeeded"): 1,
    }
    assert set(series("workhorse_job_run_seconds_count")) == {
        ("tests.unregistered_metrics.known", "")
    }
