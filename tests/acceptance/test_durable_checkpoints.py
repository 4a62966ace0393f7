"""Checkpoints in real workers: a completed stage never runs again after a
crash, a worker that lost its job cannot record a stage, and a recorded
stage or sleep reached after a cancel raises JobCanceledError."""

from __future__ import annotations

import signal

import pytest
from jobtests.durable_jobs import async_staged, misuse, replays_after_cancel, slow_stage, staged
from jobtests.models import RunRecord

from django_workhorse import Admin
from django_workhorse.models import AttemptHistory, JobOutcome
from tests.helpers import cut_connections

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

SHORT_LEASES = {"LOCK_DURATION": 2, "STALLED_INTERVAL": 0.5}


def runs(job_id: int, label: str) -> list[int]:
    """The pids that started stage ``label`` of the job, in order."""
    return list(
        RunRecord.objects.filter(job_id=job_id, label=label)
        .order_by("started_at", "id")
        .values_list("pid", flat=True)
    )


def checkpoints(job_id: int) -> dict:
    return {c.name: c.result for c in Admin().get_job(job_id).checkpoints}


def test_a_stage_completed_before_a_crash_is_not_run_again(start_worker, wait_until):
    handle = staged.enqueue(hold=60, rerun_hold=0)
    victim = start_worker("--queues", "jobtests.staged", "--id", "victim", settings=SHORT_LEASES)
    wait_until(lambda: runs(handle.id, "two"), what="stage two running in the first worker")
    assert set(checkpoints(handle.id)) == {"one"}

    victim.send(signal.SIGKILL)
    assert victim.wait_exit(10) == -signal.SIGKILL
    rescuer = start_worker("--queues", "jobtests.staged", "--id", "rescuer", settings=SHORT_LEASES)
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=handle.id).exists(),
        timeout=30,
        what="the job finished by the second worker",
    )
    assert rescuer.stop() == 0

    assert runs(handle.id, "one") == [victim.pid]
    assert runs(handle.id, "two") == [victim.pid, rescuer.pid]
    assert runs(handle.id, "three") == [rescuer.pid]
    outcome = JobOutcome.objects.get(job_id=handle.id)
    assert (outcome.state, outcome.attempts, outcome.stall_count) == ("succeeded", 1, 1)
    assert outcome.result == {"one": victim.pid, "two": {"pid": rescuer.pid}}
    assert checkpoints(handle.id) == {"one": victim.pid, "two": {"pid": rescuer.pid}}


def test_a_frozen_worker_cannot_record_a_stage_after_another_took_its_job(start_worker, wait_until):
    handle = staged.enqueue(hold=3, rerun_hold=0)
    frozen = start_worker("--queues", "jobtests.staged", "--id", "frozen", settings=SHORT_LEASES)
    wait_until(lambda: runs(handle.id, "two"), what="stage two running in the first worker")

    frozen.send(signal.SIGSTOP)
    taker = start_worker("--queues", "jobtests.staged", "--id", "taker", settings=SHORT_LEASES)
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=handle.id).exists(),
        timeout=30,
        what="the job finished by the second worker",
    )
    frozen.send(signal.SIGCONT)
    wait_until(
        lambda: "its checkpoint 'two' was refused" in frozen.stderr,
        timeout=15,
        what="the first worker reporting its refused checkpoint",
    )
    assert frozen.stop() == 0
    assert taker.stop() == 0

    # The frozen run finished stage two's function, but its record was
    # refused and it stopped there: stage three ran once, in the taker.
    assert runs(handle.id, "two") == [frozen.pid, taker.pid]
    assert RunRecord.objects.get(job_id=handle.id, label="two", pid=frozen.pid).finished_at
    assert runs(handle.id, "three") == [taker.pid]
    assert checkpoints(handle.id) == {"one": frozen.pid, "two": {"pid": taker.pid}}
    outcome = JobOutcome.objects.get(job_id=handle.id)
    assert (outcome.state, outcome.result["two"]) == ("succeeded", {"pid": taker.pid})
    history = list(
        AttemptHistory.objects.filter(job_id=handle.id)
        .order_by("finished_at", "id")
        .values_list("outcome", "worker_id")
    )
    assert history == [("stalled", frozen.worker_id), ("succeeded", taker.worker_id)]


def test_a_frozen_worker_cannot_record_an_async_stage_after_another_took_its_job(
    start_worker, wait_until
):
    handle = async_staged.enqueue(hold=3, rerun_hold=0)
    flags = ("--queues", "jobtests.asyncstaged")
    frozen = start_worker(*flags, "--id", "frozen", settings=SHORT_LEASES)
    wait_until(lambda: runs(handle.id, "two"), what="stage two running in the first worker")

    frozen.send(signal.SIGSTOP)
    taker = start_worker(*flags, "--id", "taker", settings=SHORT_LEASES)
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=handle.id).exists(),
        timeout=30,
        what="the job finished by the second worker",
    )
    frozen.send(signal.SIGCONT)
    # Its liveness check, its heartbeat or its refused checkpoint tells it
    # first, as timing has it; its async handler is cancelled, so stage two
    # never records anything of the first worker's.
    wait_until(lambda: "lease lost" in frozen.stderr, timeout=15, what="the first worker told")
    assert frozen.stop() == 0
    assert taker.stop() == 0

    assert runs(handle.id, "two") == [frozen.pid, taker.pid]
    assert runs(handle.id, "three") == [taker.pid]
    assert checkpoints(handle.id) == {"one": frozen.pid, "two": {"pid": taker.pid}}
    outcome = JobOutcome.objects.get(job_id=handle.id)
    assert (outcome.state, outcome.result["two"]) == ("succeeded", {"pid": taker.pid})


@pytest.mark.parametrize(
    ("how", "error", "message"),
    [
        ("not-json", "InvalidCheckpointError", "result['when'] is an object, which is not JSON"),
        ("twice", "DuplicateCheckpointError", "the name 'stage' was already used in this run"),
        ("other-thread", "NotInJobError", "ctx.sleep() was called outside a running job"),
    ],
)
def test_a_misused_checkpoint_or_sleep_fails_the_job_clearly_and_records_nothing_more(
    how, error, message, start_worker, wait_until
):
    handle = misuse.enqueue(how=how)
    worker = start_worker("--queues", "jobtests.misuse")
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=handle.id).exists(),
        what="the job ended",
    )
    assert worker.stop() == 0

    snapshot = Admin().get_job(handle.id)
    assert (snapshot.state, snapshot.current_attempt) == ("failed", 1)
    assert snapshot.error["type"] == f"django_workhorse.exceptions.{error}"
    assert message in snapshot.error["message"]
    # The second use of a name neither ran its function nor wrote anything.
    expected = {"stage": runs(handle.id, "stage")[0]} if how == "twice" else {}
    assert checkpoints(handle.id) == expected
    assert len(runs(handle.id, "stage")) == (1 if how == "twice" else 0)


def test_a_timed_out_run_cannot_record_its_stage_and_stops_there(start_worker, wait_until):
    handle = slow_stage.enqueue(seconds=2)
    worker = start_worker("--queues", "jobtests.slowstage")
    wait_until(
        lambda: "its checkpoint 'slow' was refused" in worker.stderr,
        timeout=15,
        what="the abandoned run's checkpoint refused",
    )
    assert worker.stop() == 0

    snapshot = Admin().get_job(handle.id)
    assert (snapshot.state, snapshot.error["type"]) == (
        "failed",
        "django_workhorse.exceptions.JobTimeout",
    )
    assert snapshot.checkpoints == ()
    assert runs(handle.id, "after") == []


@pytest.mark.parametrize("kind", ["checkpoint", "sleep"])
def test_a_replayed_stage_or_sleep_after_a_cancel_raises_job_cancelled(
    kind, start_worker, wait_until
):
    worker = start_worker(
        "--queues",
        "jobtests.replaycancel",
        settings={"LOCK_DURATION": 600, "LOCK_RENEW_INTERVAL": 300},
    )
    job = replays_after_cancel.enqueue(kind=kind)
    wait_until(
        lambda: RunRecord.objects.filter(job_id=job.id, label="second life").exists(),
        timeout=60,
        what="the run after the failed one to start",
    )

    assert Admin().cancel(job.id, reason="replay").status == "requested"

    # The handler only reaches its recorded stage once its worker heard of
    # the cancel, and records what the replay did.
    decided = RunRecord.objects.filter(job_id=job.id, label__startswith=f"{kind}:")
    wait_until(decided.exists, timeout=60, what="the handler to reach its recorded stage")
    assert list(decided.values_list("label", flat=True)) == [f"{kind}:cancelled"]
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=job.id).exists(),
        timeout=60,
        what="the job to end",
    )
    assert JobOutcome.objects.get(job_id=job.id).state == "canceled"
    assert worker.stop() == 0


def test_a_checkpoint_connection_cut_while_idle_costs_no_attempt(start_worker, wait_until):
    # As after a PostgreSQL restart in a quiet hour: the claim connection,
    # which checkpoints are written on, died while no job used it.
    worker = start_worker("--queues", "jobtests.staged", "--concurrency", "1")
    first = staged.enqueue()
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=first.id).exists(), what="the first job done"
    )
    assert cut_connections("workhorse-worker") == 1

    second = staged.enqueue()
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=second.id).exists(), what="the second job done"
    )
    assert worker.stop() == 0

    outcome = JobOutcome.objects.get(job_id=second.id)
    assert (outcome.state, outcome.attempts) == ("succeeded", 1)
    assert list(
        AttemptHistory.objects.filter(job_id=second.id).values_list("outcome", flat=True)
    ) == ["succeeded"]
