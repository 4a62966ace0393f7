"""Two workers drain a backlog: every job succeeds once, no handler runs twice."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import Count
from jobtests.jobs import record
from jobtests.models import RunRecord

from django_workhorse.models import AttemptHistory, JobOutcome, JobRuntime
from tests.helpers import timeline_events

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

JOBS = 2000


def test_two_workers_drain_a_backlog_running_each_job_exactly_once(start_worker, wait_until):
    flags = ("--queues", "jobtests.record", "--concurrency", "4")
    first = start_worker(*flags, "--id", "drain-a", persistent_connections=True, ready=False)
    second = start_worker(*flags, "--id", "drain-b", persistent_connections=True, ready=False)
    first.wait_ready()
    second.wait_ready()
    ids = [h.id for h in record.enqueue_many([{"label": str(i)} for i in range(JOBS)])]

    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=ids).count() == JOBS,
        timeout=120,
        what=f"all {JOBS} jobs terminal",
    )

    assert first.stop() == 0
    assert second.stop() == 0
    outcomes = JobOutcome.objects.filter(job_id__in=ids)
    assert set(outcomes.values_list("state", flat=True)) == {"succeeded"}
    assert set(outcomes.values_list("attempts", flat=True)) == {1}
    assert not JobRuntime.objects.filter(job_id__in=ids).exists()
    with connection.cursor() as cursor:
        assert len(timeline_events(cursor, ids, "claimed")) == JOBS
    runs = RunRecord.objects.filter(job_id__in=ids)
    assert runs.count() == JOBS
    assert not runs.values("job_id").annotate(n=Count("id")).filter(n__gt=1).exists()
    history = AttemptHistory.objects.filter(job_id__in=ids)
    assert history.count() == JOBS
    assert set(history.values_list("outcome", flat=True)) == {"succeeded"}
    by_worker = dict(
        history.values("worker_id").annotate(n=Count("id")).values_list("worker_id", "n")
    )
    assert set(by_worker) == {first.worker_id, second.worker_id}, by_worker
    assert set(runs.values_list("pid", flat=True)) == {first.pid, second.pid}
