"""No job waits in silence, with real ``runworker`` processes (docs/worker.md,
"What the worker's warnings mean"): a worker told ``--queues NAME`` serves NAME even when no
job it knows uses it, and says so once with the known queues it looks like;
a starting worker warns of ready jobs on queues that neither it nor any live
worker serves."""

from __future__ import annotations

import pytest
from jobtests.jobs import record

import django_workhorse as workhorse

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

SAID_SERVED = "serving queue(s) jobtests.recrod as told"


def test_runworker_serves_a_queue_it_was_told_to_that_no_known_job_uses(start_worker):
    handle = record.options(queue="jobtests.recrod").enqueue(label="typo")

    worker = start_worker("--queues", "jobtests.recrod", "--burst", ready=False)

    assert worker.wait_exit(60) == 0, worker.stderr
    assert workhorse.Admin().get_job(handle.id).state == "succeeded"
    assert worker.stderr.count(SAID_SERVED) == 1, worker.stderr
    assert "if that is a typo: 'jobtests.recrod' looks like 'jobtests.record'" in worker.stderr


def test_a_starting_worker_warns_of_ready_jobs_on_a_queue_no_worker_serves(start_worker):
    record.options(queue="jobtests.recrod").enqueue(label="typo")
    record.options(queue="jobtests.recrod").enqueue(label="typo")

    worker = start_worker("--queues", "jobtests.record")
    worker.stop()

    assert (
        "ready jobs wait on queue(s) that no live worker serves: 'jobtests.recrod' "
        "(2 ready, like 'jobtests.record'). This worker serves jobtests.record."
    ) in worker.stderr, worker.stderr


def test_a_starting_worker_leaves_out_a_queue_another_live_worker_serves(start_worker, wait_until):
    workhorse.Admin().pause_queue("jobtests.sleep")  # its ready job stays ready
    first = start_worker("--queues", "jobtests.sleep", name="sleeper")
    wait_until(
        lambda: any("jobtests.sleep" in w.queues for w in workhorse.Admin().live_workers()),
        what="the first worker's heartbeat",
    )
    record.options(queue="jobtests.sleep").enqueue(label="paused")

    second = start_worker("--queues", "jobtests.record", name="recorder")
    second.stop()
    first.stop()

    assert "no live worker serves" not in second.stderr, second.stderr
