"""``runworker --max-jobs``, ``--max-seconds`` and ``--exclude-queues`` in real
processes (docs/worker.md; docs/migrating.md maps ``db_worker``'s flags)."""

from __future__ import annotations

import pytest
from jobtests.jobs import record, tag_context

import django_workhorse as workhorse

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def states(handles) -> list[str]:
    return [workhorse.Admin().get_job(h.id).state for h in handles]


def test_max_jobs_runs_that_many_jobs_then_exits_0(start_worker):
    handles = [record.enqueue(label=str(n)) for n in range(5)]

    worker = start_worker("--queues", "jobtests.record", "--max-jobs", "2", ready=False)

    assert worker.wait_exit(60) == 0, worker.stderr
    assert sorted(states(handles)) == ["ready"] * 3 + ["succeeded"] * 2
    assert "--max-jobs 2 reached; finishing the running jobs, then exiting" in worker.stderr


def test_max_seconds_stops_an_idle_worker_with_exit_0(start_worker):
    worker = start_worker("--queues", "jobtests.record", "--max-seconds", "0.5")

    assert worker.wait_exit(30) == 0, worker.stderr
    assert "--max-seconds 0.5 reached" in worker.stderr


def test_processes_start_a_fresh_child_for_each_that_reached_max_jobs(start_worker, wait_until):
    supervisor = start_worker(
        "--queues", "jobtests.record", "--processes", "2", "--max-jobs", "1", processes=2
    )
    handles = [record.enqueue(label=str(n)) for n in range(6)]

    wait_until(lambda: states(handles) == ["succeeded"] * 6, timeout=60, what="six jobs run")

    # Each child ran one job: six children announced themselves, at least.
    wait_until(lambda: len(supervisor.worker_ids()) >= 6, timeout=30, what="fresh children")
    assert "exited with" not in supervisor.stderr  # no restart of a failed child
    assert supervisor.stop() == 0


def test_exclude_queues_serves_the_default_queues_but_those(start_worker):
    skipped = record.enqueue(label="not here")
    served = tag_context.enqueue(tag="here")

    worker = start_worker("--exclude-queues", "jobtests.record", "--burst", ready=False)

    assert worker.wait_exit(60) == 0, worker.stderr
    assert states([served, skipped]) == ["succeeded", "ready"]


def test_exclude_queues_refuses_a_queue_it_would_not_serve_anyway(start_worker):
    worker = start_worker("--exclude-queues", "jobtests.nowhere", ready=False)

    assert worker.wait_exit(30) == 1
    assert "--exclude-queues: unknown queue(s) jobtests.nowhere" in worker.stderr
    assert "Traceback" not in worker.stderr
