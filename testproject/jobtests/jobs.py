"""Jobs the acceptance tests run in real ``runworker`` processes.

Every job has a queue of its own (``jobtests.*``), so a test starts workers
for exactly the queues it needs, and every handler records its runs in
``RunRecord``.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import time

from django.conf import settings
from django.utils import timezone

import django_workhorse as workhorse

from . import log_capture
from .models import RunRecord

log_capture.install()
logger = logging.getLogger("jobtests")


class PlannedFailure(Exception):
    """Raised by the failing jobs on purpose."""


def run_record(label: str = "", *, finished: bool = False) -> RunRecord:
    """An unsaved record of the current job's run, started now (and finished,
    if ``finished``)."""
    ctx = workhorse.current_job()
    now = timezone.now()
    return RunRecord(
        job_id=ctx.job_id,
        attempt=ctx.attempt,
        pid=os.getpid(),
        worker_id=ctx.worker_id,
        label=label,
        started_at=now,
        finished_at=now if finished else None,
    )


def start_run(label: str = "", *, finished: bool = False) -> RunRecord:
    """Record that the current job's handler started (and, optionally, finished)."""
    run = run_record(label, finished=finished)
    run.save()
    return run


def finish_run(run: RunRecord) -> None:
    run.finished_at = timezone.now()
    run.save(update_fields=["finished_at"])


@workhorse.job(queue="jobtests.record")
def record(label: str = "") -> dict:
    """Records one run and returns where it ran."""
    run = start_run(label, finished=True)
    return {"pid": run.pid, "attempt": run.attempt}


@workhorse.job(queue="jobtests.sleep")
def sleep(seconds: float, rerun_seconds: float | None = None, label: str = "") -> float:
    """Sleeps ``seconds``, recording start and finish. A run of a job that has
    run before sleeps ``rerun_seconds`` instead, when given: a long first run
    for a worker to lose, a short one for the worker that takes over."""
    ctx = workhorse.current_job()
    if rerun_seconds is not None and RunRecord.objects.filter(job_id=ctx.job_id).exists():
        seconds = rerun_seconds
    run = start_run(label)
    time.sleep(seconds)
    finish_run(run)
    return seconds


@workhorse.job(
    queue="jobtests.flaky",
    max_attempts=5,
    backoff=workhorse.exponential(base=0.2, max=10, jitter=0),
)
def flaky(failures: int) -> int:
    """Fails its first ``failures`` attempts, then returns the attempt number."""
    run = start_run(finished=True)
    if run.attempt <= failures:
        raise PlannedFailure(f"planned failure {run.attempt} of {failures}")
    return run.attempt


@workhorse.job(queue="jobtests.doomed", max_attempts=2, backoff=workhorse.fixed(0.1))
def doomed() -> None:
    """Fails every attempt; two attempts allowed."""
    run = start_run(finished=True)
    raise PlannedFailure(f"doomed attempt {run.attempt}")


@workhorse.job(queue="jobtests.timeout", timeout=1, max_attempts=1)
def too_slow(seconds: float = 5) -> float:
    """Sleeps past its one-second timeout."""
    run = start_run()
    time.sleep(seconds)
    finish_run(run)
    return seconds


@workhorse.job(
    queue="jobtests.timeout",
    timeout=1,
    max_attempts=2,
    backoff=workhorse.fixed(0.1),
    retry_on=(TimeoutError,),
)
def slow_once(seconds: float = 5) -> int:
    """Sleeps past its one-second timeout on its first run only; retried
    only for a TimeoutError (``retry_on``)."""
    ctx = workhorse.current_job()
    if not RunRecord.objects.filter(job_id=ctx.job_id).exists():
        run = start_run()
        time.sleep(seconds)
        finish_run(run)
    return ctx.attempt


@workhorse.job(queue="jobtests.async")
async def async_echo(value: str) -> dict:
    """An async handler: awaits, writes through the async ORM, returns."""
    await asyncio.sleep(0.05)
    await run_record("async", finished=True).asave()
    return {"echo": value, "attempt": workhorse.current_job().attempt}


@workhorse.job(queue="jobtests.logs")
def log_warning(message: str) -> None:
    """Logs one warning through the ``jobtests`` logger."""
    start_run(finished=True)
    logger.warning("handler says %s", message)


REQUEST_TAG: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "jobtests_request_tag", default=None
)
"""A context variable a handler sets, as logging or tracing libraries bind
their per-request values."""


@workhorse.job(queue="jobtests.context")
def tag_context(tag: str) -> str | None:
    """Sets ``REQUEST_TAG`` to ``tag``; returns the value it found first."""
    start_run(tag, finished=True)
    found = REQUEST_TAG.get()
    REQUEST_TAG.set(tag)
    return found


@workhorse.job(queue="jobtests.context")
async def atag_context(tag: str) -> str | None:
    """``tag_context`` as an async handler."""
    await run_record(tag, finished=True).asave()
    found = REQUEST_TAG.get()
    REQUEST_TAG.set(tag)
    return found


@workhorse.job(queue="jobtests.asyncblock", timeout=1, max_attempts=1)
async def async_blocks_loop(seconds: float) -> None:
    """An async handler that blocks its event loop past its timeout, then
    yields: the timeout can only take effect at that await."""
    await run_record().asave()
    time.sleep(seconds)
    await asyncio.sleep(0.05)


@workhorse.job(queue="jobtests.gather")
def gather(label: str = "") -> dict:
    """Records one run and returns its prerequisites' states and results
    (``ctx.prerequisites()``)."""
    start_run(label, finished=True)
    return {
        str(p.id): {"state": p.state, "result": p.result}
        for p in workhorse.current_job().prerequisites()
    }


# -- jobs an operator cancels while they run (queue jobtests.cancel) ---------


@workhorse.job(queue="jobtests.cancel", max_attempts=3)
def checks_for_cancel(seconds: float = 3600) -> None:
    """Works in small steps for up to ``seconds``, asking between steps
    whether its job was cancelled."""
    ctx = workhorse.current_job()
    run = start_run("checks")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ctx.raise_if_canceled()
        time.sleep(0.01)
    finish_run(run)


@workhorse.job(queue="jobtests.cancel", max_attempts=3)
def stuck(seconds: float = 3600) -> None:
    """Sleeps in one call that nothing interrupts."""
    run = start_run("stuck")
    time.sleep(seconds)
    finish_run(run)


@workhorse.job(queue="jobtests.cancel", max_attempts=3)
async def async_stuck(seconds: float = 3600) -> None:
    """Awaits for ``seconds``; cancelling the task ends it."""
    run = run_record("async_stuck")
    await run.asave()
    await asyncio.sleep(seconds)
    run.finished_at = timezone.now()
    await run.asave(update_fields=["finished_at"])


@workhorse.job(queue="jobtests.cancel", max_attempts=1)
def rendezvous(label: str, parties: int, wait: float = 60) -> None:
    """Records its start, then waits until ``parties`` runs of ``label`` have
    started: it only returns if that many run at the same time."""
    run = start_run(label)
    deadline = time.monotonic() + wait
    while RunRecord.objects.filter(label=label).count() < parties:
        if time.monotonic() > deadline:
            raise PlannedFailure(f"fewer than {parties} runs of {label!r} ran at once")
        time.sleep(0.02)
    finish_run(run)


@workhorse.job(queue="jobtests.gated")
def gated(path: str, label: str = "", wait: float = 120) -> None:
    """Records its start, then runs until the file ``path`` exists: a job
    whose end the test decides (it opens the gate by creating the file), so
    that the job outlasts what the test does to its worker on a machine of
    any speed. Every run waits for the same file and records itself."""
    run = start_run(label)
    deadline = time.monotonic() + wait
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise PlannedFailure(f"the gate {path} never opened")
        time.sleep(0.02)
    finish_run(run)


@workhorse.job(queue="jobtests.cancel", max_attempts=1)
def short_sleep(seconds: float, label: str = "") -> None:
    """Sleeps ``seconds``, recording start and finish (for overlap counts)."""
    run = start_run(label)
    time.sleep(seconds)
    finish_run(run)


@workhorse.job(queue="jobtests.lives", max_attempts=1)
def fails_first_life() -> str:
    """Fails the first time it ever runs; any later run (after an operator's
    retry) succeeds."""
    ctx = workhorse.current_job()
    first = not RunRecord.objects.filter(job_id=ctx.job_id).exists()
    start_run("first" if first else "again", finished=True)
    if first:
        raise PlannedFailure("the first life fails")
    return "second life"


@workhorse.job(queue="jobtests.cancel", max_attempts=3)
def cancels_itself() -> None:
    """Decides on its own that there is nothing to do: raises JobCanceledError."""
    start_run("gives up", finished=True)
    raise workhorse.JobCanceledError("nothing left to do")


FAILURES = {"refused": ConnectionRefusedError, "reset": ConnectionResetError, "value": ValueError}


@workhorse.job(
    queue="jobtests.picky",
    max_attempts=4,
    backoff=workhorse.fixed(0.1),
    retry_on=(ConnectionError,),
)
def picky(failures: list[str]) -> str:
    """Raises ``FAILURES[failures[n]]`` at attempt n + 1 while there are
    failures left; retried only for a ConnectionError (``retry_on``)."""
    attempt = workhorse.current_job().attempt
    start_run(f"attempt {attempt}", finished=True)
    if attempt <= len(failures):
        raise FAILURES[failures[attempt - 1]](f"attempt {attempt}")
    return f"done at attempt {attempt}"


def an_hour_per_attempt(attempt: int) -> float:
    return 3600.0 * attempt


def broken_backoff(attempt: int) -> float:
    raise RuntimeError("this backoff is broken")


@workhorse.job(queue="jobtests.backoff", max_attempts=3, backoff=an_hour_per_attempt)
def waits_by_the_hour() -> None:
    """Fails; a custom backoff callable decides its retry delay."""
    start_run(finished=True)
    raise PlannedFailure("fails every attempt")


@workhorse.job(queue="jobtests.backoff", max_attempts=3, backoff=broken_backoff)
def broken_retry_delay() -> None:
    """Fails; its backoff callable raises."""
    start_run(finished=True)
    raise PlannedFailure("fails every attempt")


@workhorse.job(queue="jobtests.liveness", max_attempts=3)
def watches_its_lease(marks: str, wait: float = 120) -> None:
    """Works in small steps until the file ``<marks>/finish`` exists (the
    test decides when a run may end; at most ``wait`` seconds), asking
    between steps whether its run still holds the job; writes
    ``<marks>/<pid>.started``, and ``<pid>.stopped`` or ``<pid>.done``, each
    holding the time, to files (a worker cut off from the database can
    still write those)."""
    ctx = workhorse.current_job()
    mark = os.path.join(marks, str(os.getpid()))
    with open(mark + ".started", "w") as f:
        f.write(repr(time.time()))
    finish = os.path.join(marks, "finish")
    end = time.monotonic() + wait
    try:
        while not os.path.exists(finish) and time.monotonic() < end:
            ctx.raise_if_canceled()
            time.sleep(0.01)
    except BaseException:
        with open(mark + ".stopped", "w") as f:
            f.write(repr(time.time()))
        raise
    with open(mark + ".done", "w") as f:
        f.write(repr(time.time()))


# Jobs with checkpoints and sleeps, and handlers that misbehave.
from . import durable_jobs, fates, poison_jobs  # noqa: E402, F401

if "second" in settings.DATABASES:
    # Jobs bound to the second store exist only when the project has one.
    from . import second_store  # noqa: F401
