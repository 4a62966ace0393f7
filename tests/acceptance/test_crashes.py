"""A worker that dies or freezes loses nothing: leases expire and another
worker recovers the job; the frozen worker's late finish is refused."""

from __future__ import annotations

import signal

import pytest
from jobtests.jobs import sleep
from jobtests.models import RunRecord

from django_workhorse import Admin
from django_workhorse.models import AttemptHistory, JobEvent, JobOutcome, JobRuntime

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

SHORT_LEASES = {"LOCK_DURATION": 2, "STALLED_INTERVAL": 0.5}


def started_by(worker, job_ids) -> bool:
    return RunRecord.objects.filter(job_id__in=job_ids, pid=worker.pid).count() == len(job_ids)


def test_jobs_of_a_sigkilled_worker_are_recovered_without_using_an_attempt(
    start_worker, wait_until
):
    ids = [h.id for h in sleep.enqueue_many([{"seconds": 60, "rerun_seconds": 0.2}] * 2)]
    victim = start_worker(
        "--queues", "jobtests.sleep", "--concurrency", "2", "--id", "victim", settings=SHORT_LEASES
    )
    wait_until(lambda: started_by(victim, ids), what="both jobs running in the victim")
    victim_id = victim.worker_id

    victim.send(signal.SIGKILL)
    assert victim.wait_exit(10) == -signal.SIGKILL
    rescuer = start_worker("--queues", "jobtests.sleep", "--id", "rescuer", settings=SHORT_LEASES)
    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=ids).count() == 2,
        timeout=30,
        what="both jobs terminal",
    )
    assert rescuer.stop() == 0

    for job_id in ids:
        outcome = JobOutcome.objects.get(job_id=job_id)
        assert (outcome.state, outcome.attempts, outcome.stall_count) == ("succeeded", 1, 1)
        history = list(
            AttemptHistory.objects.filter(job_id=job_id)
            .order_by("finished_at", "id")
            .values_list("attempt", "outcome", "worker_id")
        )
        assert history == [(1, "stalled", victim_id), (1, "succeeded", rescuer.worker_id)]
        stalled = JobEvent.objects.get(job_id=job_id, kind="stalled")
        assert (stalled.worker_id, stalled.data) == (victim_id, {"stall_count": 1})
        runs = RunRecord.objects.filter(job_id=job_id).order_by("started_at")
        assert [(r.pid, r.finished_at is not None) for r in runs] == [
            (victim.pid, False),
            (rescuer.pid, True),
        ]


def test_a_frozen_worker_past_its_lease_has_its_late_finish_refused(start_worker, wait_until):
    (handle,) = sleep.enqueue_many([{"seconds": 3, "rerun_seconds": 0.2}])
    frozen = start_worker("--queues", "jobtests.sleep", "--id", "frozen", settings=SHORT_LEASES)
    wait_until(lambda: started_by(frozen, [handle.id]), what="the job running in the first worker")
    frozen_id = frozen.worker_id

    frozen.send(signal.SIGSTOP)
    taker = start_worker("--queues", "jobtests.sleep", "--id", "taker", settings=SHORT_LEASES)
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=handle.id).exists(),
        timeout=30,
        what="the job finished by the second worker",
    )
    finished = JobOutcome.objects.get(job_id=handle.id)
    frozen.send(signal.SIGCONT)
    wait_until(
        lambda: "its success was refused" in frozen.stderr,
        timeout=15,
        what="the first worker reporting its refused finish",
    )

    assert frozen.stop() == 0
    assert taker.stop() == 0
    assert f"#{handle.id}: lease lost" in frozen.stderr
    assert not JobRuntime.objects.filter(job_id=handle.id).exists()
    (outcome,) = JobOutcome.objects.filter(job_id=handle.id)
    assert (outcome.state, outcome.attempts, outcome.stall_count) == ("succeeded", 1, 1)
    assert outcome.finished_at == finished.finished_at
    history = list(
        AttemptHistory.objects.filter(job_id=handle.id)
        .order_by("finished_at", "id")
        .values_list("outcome", "worker_id")
    )
    assert history == [("stalled", frozen_id), ("succeeded", taker.worker_id)]
    succeeded = [
        e.worker_id
        for e in Admin().get_job_timeline(handle.id).items
        if (e.source, e.kind) == ("event", "succeeded")
    ]
    assert succeeded == [taker.worker_id]
    # Both runs happened (at-least-once); only the second one counted.
    runs = RunRecord.objects.filter(job_id=handle.id).order_by("started_at")
    assert [(r.pid, r.finished_at is not None) for r in runs] == [
        (frozen.pid, True),
        (taker.pid, True),
    ]


def test_the_lock_duration_and_stalled_interval_flags_drive_recovery(start_worker, wait_until):
    """Under the defaults (30 s each) nothing would be recovered within the wait."""
    rescuer = start_worker("--queues", "jobtests.record", "--stalled-interval", "0.5")
    job = sleep.enqueue(seconds=60)
    victim = start_worker("--queues", "jobtests.sleep", "--lock-duration", "1")
    wait_until(lambda: started_by(victim, [job.id]), what="the job running in the victim")

    victim.send(signal.SIGKILL)
    assert victim.wait_exit(10) == -signal.SIGKILL
    wait_until(
        lambda: f"#{job.id} recovered from an expired lease" in rescuer.stderr,
        timeout=15,
        what="the rescuer recovering the victim's job",
    )

    assert rescuer.stop() == 0
    runtime = JobRuntime.objects.get(job_id=job.id)
    assert (runtime.state, runtime.stall_count) == ("ready", 1)
