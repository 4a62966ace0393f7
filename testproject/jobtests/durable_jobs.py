"""Jobs with checkpoints and durable sleeps, for the acceptance tests.

Each stage records its runs in ``RunRecord`` under its own label, so a test
can count how often a stage really ran. Imported by ``jobs.py``.
"""

from __future__ import annotations

import asyncio
import threading
import time

from asgiref.sync import sync_to_async

import django_workhorse as workhorse

from .jobs import finish_run, start_run  # jobs.py imports this module at its end
from .models import RunRecord


def _run_record(label: str, *, finished: bool = True) -> RunRecord:
    return start_run(label, finished=finished)


def _ran_before(label: str) -> bool:
    return RunRecord.objects.filter(job_id=workhorse.current_job().job_id, label=label).exists()


@workhorse.job(queue="jobtests.staged", max_attempts=3)
def staged(hold: float = 0, rerun_hold: float | None = None) -> dict:
    """Three stages; the first two are checkpoints. Stage two holds its
    thread ``hold`` seconds on its first run (``rerun_hold`` on later runs):
    time for a test to kill or freeze the worker between the stages."""
    ctx = workhorse.current_job()
    one = ctx.checkpoint("one", lambda: _run_record("one").pid)

    def two() -> dict:
        seconds = rerun_hold if rerun_hold is not None and _ran_before("two") else hold
        run = _run_record("two", finished=False)
        time.sleep(seconds)
        finish_run(run)
        return {"pid": run.pid}

    second = ctx.checkpoint("two", two)
    _run_record("three")
    return {"one": one, "two": second}


@workhorse.job(queue="jobtests.nap", max_attempts=3)
def nap(seconds: float) -> dict:
    """One checkpoint, a durable sleep of ``seconds``, then one more stage."""
    ctx = workhorse.current_job()
    before = ctx.checkpoint("before", lambda: _run_record("before").pid)
    ctx.sleep("nap", seconds)
    after = _run_record("after")
    return {"before": before, "after": after.pid}


@workhorse.job(queue="jobtests.nap")
def nap_neighbour(seconds: float = 0.2) -> int:
    """Another job of the nap queue: it can only run while a slot is free."""
    run = _run_record("neighbour", finished=False)
    time.sleep(seconds)
    finish_run(run)
    return run.pid


@workhorse.job(queue="jobtests.misuse", max_attempts=1)
def misuse(how: str) -> None:
    """Uses checkpoints or sleep wrongly, as ``how`` says."""
    ctx = workhorse.current_job()
    if how == "not-json":
        ctx.checkpoint("stage", lambda: {"when": object()})
    elif how == "twice":
        ctx.checkpoint("stage", lambda: _run_record("stage").pid)
        ctx.checkpoint("stage", lambda: _run_record("stage").pid)
    elif how == "other-thread":
        errors: list[BaseException] = []

        def sleep_elsewhere() -> None:
            try:
                ctx.sleep("nap", 1)
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=sleep_elsewhere)
        thread.start()
        thread.join()
        raise errors[0]


@workhorse.job(queue="jobtests.asyncstaged", max_attempts=3)
async def async_staged(hold: float = 0, rerun_hold: float | None = None) -> dict:
    """``staged`` for an async handler: two acheckpoints, then one more stage."""
    ctx = workhorse.current_job()

    async def one() -> int:
        return (await sync_to_async(_run_record)("one")).pid

    async def two() -> dict:
        ran_before = await sync_to_async(_ran_before)("two")
        seconds = rerun_hold if rerun_hold is not None and ran_before else hold
        run = await sync_to_async(_run_record)("two", finished=False)
        await asyncio.sleep(seconds)
        await sync_to_async(finish_run)(run)
        return {"pid": run.pid}

    first = await ctx.acheckpoint("one", one)
    second = await ctx.acheckpoint("two", two)
    await sync_to_async(_run_record)("three")
    return {"one": first, "two": second}


@workhorse.job(queue="jobtests.asyncnap")
async def async_nap(seconds: float) -> dict:
    """``nap`` for an async handler: acheckpoint, asleep, then one more stage."""
    ctx = workhorse.current_job()

    async def before() -> int:
        return (await sync_to_async(_run_record)("before")).pid

    first = await ctx.acheckpoint("before", before)
    await ctx.asleep("nap", seconds)
    after = await sync_to_async(_run_record)("after")
    return {"before": first, "after": after.pid}


@workhorse.job(queue="jobtests.slowstage", timeout=1, max_attempts=1)
def slow_stage(seconds: float) -> None:
    """A stage that outlasts the job's one-second timeout, then one more stage."""
    ctx = workhorse.current_job()
    ctx.checkpoint("slow", lambda: time.sleep(seconds) or seconds)
    _run_record("after")


@workhorse.job(queue="jobtests.replaycancel", max_attempts=2, backoff=workhorse.fixed(0.1))
def replays_after_cancel(kind: str) -> str:
    """Records a checkpoint (``kind`` "checkpoint") or takes a short sleep
    ("sleep") in its first run, then fails that run. The next run waits
    until its worker has heard of a cancel, without asking
    ``raise_if_canceled()``, and only then reaches the recorded stage
    again: it records whether the replay went on ("<kind>:replayed") or
    raised JobCanceledError ("<kind>:cancelled")."""
    ctx = workhorse.current_job()
    if not _ran_before("first life"):
        if kind == "checkpoint":
            ctx.checkpoint("stage", lambda: "recorded")
        else:
            ctx.sleep("nap", 0)
        _run_record("first life")
        raise RuntimeError("the first life fails after its stage")
    _run_record("second life")
    deadline = time.monotonic() + 60
    while not ctx.cancel_requested and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        if kind == "checkpoint":
            ctx.checkpoint("stage", lambda: "ran again")
        else:
            ctx.sleep("nap", 0)
    except workhorse.JobCanceledError:
        _run_record(f"{kind}:cancelled")
        raise
    _run_record(f"{kind}:replayed")
    return "went on"
