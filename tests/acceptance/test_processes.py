"""``runworker --processes N``: N worker processes under one supervisor."""

from __future__ import annotations

import os
import signal

import pytest
from jobtests.jobs import record, sleep
from jobtests.models import RunRecord

from django_workhorse.models import AttemptHistory, JobOutcome, JobRuntime

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

FLEET = ("--processes", "2", "--queues", "jobtests.record", "--concurrency", "2", "--id", "fleet")


def test_two_processes_drain_jobs_and_sigterm_stops_both_with_exit_0(start_worker, wait_until):
    supervisor = start_worker(*FLEET, processes=2, persistent_connections=True)
    children = supervisor.children()
    assert len(children) == 2
    ids = [h.id for h in record.enqueue_many([{"label": str(i)} for i in range(100)])]
    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=ids, state="succeeded").count() == 100,
        timeout=60,
        what="100 jobs succeeded",
    )

    assert supervisor.stop() == 0
    assert supervisor.group() == []
    pids = set(RunRecord.objects.filter(job_id__in=ids).values_list("pid", flat=True))
    assert pids == set(children)
    workers = set(AttemptHistory.objects.filter(job_id__in=ids).values_list("worker_id", flat=True))
    assert workers == set(supervisor.worker_ids())
    assert all(worker.startswith("fleet:") for worker in workers)


def test_a_sigkilled_child_is_restarted_by_the_supervisor(start_worker, wait_until):
    supervisor = start_worker(*FLEET, processes=2)
    killed, survivor = supervisor.children()

    os.kill(killed, signal.SIGKILL)
    wait_until(
        lambda: len(supervisor.children()) == 2 and killed not in supervisor.children(),
        timeout=20,
        what="a new child in place of the killed one",
    )
    assert survivor in supervisor.children()
    supervisor.wait_ready(count=3)
    assert f"(pid {killed}) exited with -9; restarting" in supervisor.stderr

    ids = [h.id for h in record.enqueue_many([{"label": str(i)} for i in range(10)])]
    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=ids, state="succeeded").count() == 10,
        timeout=30,
        what="jobs done after the restart",
    )
    assert supervisor.stop() == 0
    assert supervisor.group() == []


def test_a_signal_to_the_whole_process_group_stops_the_fleet_gracefully(start_worker, wait_until):
    """Ctrl-C in a terminal (or systemd's KillMode=control-group) signals every
    process of the group once: each worker must still get one graceful stop."""
    supervisor = start_worker(*FLEET, processes=2)
    assert len(supervisor.children()) == 2

    os.killpg(supervisor.pid, signal.SIGINT)
    code = supervisor.wait_exit(30)

    stderr = supervisor.stderr
    graceful = stderr.count("SIGINT received, finishing running jobs")
    forced = stderr.count("second SIGINT, stopping now")
    assert (code, graceful, forced) == (0, 2, 0), (
        f"exit {code}, {graceful} graceful and {forced} forced stops:\n{supervisor.tail(8)}"
    )
    assert supervisor.group() == []


def test_a_child_that_cannot_start_is_not_restarted_forever(start_worker, wait_until):
    supervisor = start_worker(
        *FLEET, settings={"ON_JOB_FAILURE": "jobtests.hooks.nosuch"}, ready=False
    )
    wait_until(
        lambda: not supervisor.alive() or "restarting" in supervisor.stderr,
        timeout=60,
        what="the supervisor exiting, or restarting a child",
    )

    assert "restarting" not in supervisor.stderr, (
        "the supervisor restarted a child that failed at start-up:\n" + supervisor.tail(6)
    )
    assert supervisor.wait_exit(10) != 0
    assert "cannot import 'jobtests.hooks.nosuch'" in supervisor.stderr


def test_a_second_sigterm_to_the_supervisor_stops_its_workers_at_once_and_exits_1(
    start_worker, wait_until
):
    ids = [h.id for h in sleep.enqueue_many([{"seconds": 60}] * 2)]
    supervisor = start_worker(
        "--processes", "2", "--queues", "jobtests.sleep", "--shutdown-grace", "3600", processes=2
    )
    children = supervisor.children()
    wait_until(
        lambda: (
            set(RunRecord.objects.filter(job_id__in=ids).values_list("pid", flat=True))
            == set(children)
        ),
        what="one job running in each worker",
    )

    supervisor.send(signal.SIGTERM)
    wait_until(
        lambda: supervisor.stderr.count("SIGTERM received, finishing running jobs") == 2,
        what="both workers draining",
    )
    supervisor.send(signal.SIGTERM)

    assert supervisor.wait_exit(30) == 1, supervisor.stderr
    assert supervisor.stderr.count("second SIGTERM, stopping now") == 2
    assert supervisor.group() == []
    states = JobRuntime.objects.filter(job_id__in=ids).values_list("state", flat=True)
    assert list(states) == ["ready", "ready"]
