"""Checkpoints and sleep as a handler sees them, run in this process by
``django_workhorse.testing.run_jobs`` (the worker's SQL functions, no worker
process): replay after a failed attempt, the sleep that returns once slept,
async handlers, and every misuse refused before anything is written."""

from __future__ import annotations

import threading
import warnings
from datetime import UTC, datetime, timedelta, timezone

import pytest
from jobtests.models import RunRecord

import django_workhorse as workhorse
from django_workhorse.context import JobContext
from django_workhorse.testing import run_jobs

pytestmark = pytest.mark.django_db

CALLS: list[str] = []
"""Every stage function call, in order (cleared by each test)."""


@pytest.fixture(autouse=True)
def _calls():
    CALLS.clear()
    yield
    CALLS.clear()


def stage(label: str, value=None):
    def fn():
        CALLS.append(label)
        return value if value is not None else label

    return fn


@workhorse.job(queue="tests.durable", name="tests.durable.fails_once", max_attempts=2)
def fails_once() -> list:
    ctx = workhorse.current_job()
    first = ctx.checkpoint("first", stage("first", {"n": 1}))
    if ctx.attempt == 1:
        raise RuntimeError("planned failure after the first stage")
    return [first, ctx.checkpoint("second", stage("second"))]


@workhorse.job(queue="tests.durable", name="tests.durable.naps")
def naps(seconds: float) -> str:
    ctx = workhorse.current_job()
    ctx.checkpoint("before", stage("before"))
    ctx.sleep("nap", seconds)
    CALLS.append("after")
    return "awake"


@workhorse.job(queue="tests.durable", name="tests.durable.writes_then_naps")
def writes_then_naps() -> str:
    ctx = workhorse.current_job()
    RunRecord.objects.create(
        job_id=ctx.job_id, attempt=ctx.attempt, pid=0, worker_id="", started_at=datetime.now(UTC)
    )
    ctx.sleep("nap", 3600)
    return "awake"


@workhorse.job(queue="tests.durable", name="tests.durable.async_naps")
async def async_naps() -> list:
    ctx = workhorse.current_job()

    async def fetch():
        CALLS.append("fetch")
        return {"fetched": True}

    fetched = await ctx.acheckpoint("fetch", fetch)
    await ctx.asleep("nap", timedelta(seconds=30))
    CALLS.append("after")
    return [fetched]


MISUSES = {
    "bad-name": lambda ctx: ctx.checkpoint("has space", stage("x")),
    "empty-name": lambda ctx: ctx.sleep("", 1),
    "not-callable": lambda ctx: ctx.checkpoint("stage", 42),
    "not-json": lambda ctx: ctx.checkpoint("stage", stage("x", {"at": datetime.now(UTC)})),
    "twice": lambda ctx: [ctx.checkpoint("stage", stage("x")), ctx.checkpoint("stage", stage("y"))],
    "sleep-after-checkpoint-name": lambda ctx: [
        ctx.checkpoint("stage", stage("x")),
        ctx.sleep("stage", 1),
    ],
    "negative-delay": lambda ctx: ctx.sleep("nap", -1),
    "naive-wake-time": lambda ctx: ctx.sleep("nap", datetime(2030, 1, 1)),
    "delay-not-a-number": lambda ctx: ctx.sleep("nap", "soon"),
    "other-thread": lambda ctx: _in_thread(lambda: ctx.checkpoint("stage", stage("x"))),
}


def _in_thread(fn):
    errors = []

    def run():
        try:
            fn()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    raise errors[0]


@workhorse.job(queue="tests.durable.misuse", name="tests.durable.misuse", max_attempts=3)
def misuse(how: str) -> None:
    MISUSES[how](workhorse.current_job())


def test_a_stage_recorded_before_a_failure_is_not_run_again_on_the_retry():
    handle = fails_once.enqueue()

    report = run_jobs(names=[fails_once])

    assert [r.ok for r in report] == [False, True]
    assert CALLS == ["first", "second"]
    assert handle.refresh().result == [{"n": 1}, "second"]
    assert [(c.name, c.attempt) for c in handle.snapshot.checkpoints] == [
        ("first", 1),
        ("second", 2),
    ]


def test_a_sleep_ends_the_run_and_returns_at_once_after_the_wake_up():
    handle = naps.enqueue(seconds=3600)

    report = run_jobs(names=[naps])  # skip_waits: the hour passes at once

    assert [(r.slept, r.ok) for r in report] == [(True, False), (False, True)]
    assert report.failed == []
    assert CALLS == ["before", "after"]
    snapshot = handle.refresh().snapshot
    assert (snapshot.state, snapshot.current_attempt, snapshot.result) == ("succeeded", 1, "awake")
    assert [c.kind for c in snapshot.checkpoints] == ["checkpoint", "sleep"]


def test_a_sleeping_job_shows_its_wake_time():
    handle = naps.enqueue(seconds=3600)

    run_jobs(names=[naps], skip_waits=False)

    snapshot = handle.refresh().snapshot
    assert snapshot.state == "scheduled"
    assert snapshot.sleeping_until == snapshot.run_at
    assert timedelta(minutes=59) < snapshot.sleeping_until - snapshot.created_at


def test_a_sleep_until_a_time_already_past_wakes_at_once():
    @workhorse.job(queue="tests.durable.past", name="tests.durable.past")
    def past() -> str:
        workhorse.current_job().sleep("nap", datetime(2000, 1, 1, tzinfo=UTC))
        return "awake"

    handle = past.enqueue()

    run_jobs(names=[past], skip_waits=False)

    assert handle.refresh().result == "awake"


def test_async_handlers_checkpoint_and_sleep_with_the_a_prefixed_methods():
    handle = async_naps.enqueue()

    report = run_jobs(names=[async_naps])

    assert [r.slept for r in report] == [True, False]
    assert CALLS == ["fetch", "after"]
    assert handle.refresh().result == [{"fetched": True}]


@pytest.mark.parametrize(
    ("how", "error", "message"),
    [
        ("bad-name", workhorse.InvalidCheckpointError, "checkpoint name 'has space' is not valid"),
        ("empty-name", workhorse.InvalidCheckpointError, "sleep name '' is not valid"),
        ("not-callable", workhorse.InvalidCheckpointError, "fn must be a function"),
        ("not-json", workhorse.InvalidCheckpointError, "result['at'] is a datetime"),
        ("twice", workhorse.DuplicateCheckpointError, "'stage' was already used in this run"),
        (
            "sleep-after-checkpoint-name",
            workhorse.DuplicateCheckpointError,
            "'stage' was already used",
        ),
        ("negative-delay", workhorse.InvalidCheckpointError, "the delay must be 0 to"),
        ("naive-wake-time", workhorse.InvalidCheckpointError, "must be a timezone-aware"),
        ("delay-not-a-number", workhorse.InvalidCheckpointError, "expected seconds"),
        ("other-thread", workhorse.NotInJobError, "called outside a running job"),
    ],
)
def test_a_misused_checkpoint_or_sleep_raises_a_clear_error_and_writes_nothing(
    how, error, message, db_rows
):
    handle = misuse.enqueue(how=how)

    report = run_jobs(names=[misuse], skip_waits=False)

    assert isinstance(report.runs[0].error, error)
    assert message in str(report.runs[0].error)
    kept = [c["name"] for c in db_rows.checkpoints(handle.id)]
    assert kept == (["stage"] if how in ("twice", "sleep-after-checkpoint-name") else [])
    assert "y" not in CALLS  # a refused second use never runs its function


def test_a_checkpoint_result_that_is_not_json_fails_the_job_without_retry():
    handle = misuse.enqueue(how="not-json")

    run_jobs(names=[misuse])

    assert (handle.refresh().status, handle.attempts) == ("failed", 1)


def test_checkpoint_and_sleep_outside_a_job_raise_not_in_job_error():
    context = JobContext(job_id=7, name="demo.jobs.add", queue="default", attempt=1, max_attempts=5)

    with pytest.raises(workhorse.NotInJobError, match=r"ctx.sleep\(\) was called outside"):
        context.sleep("nap", 1)
    with pytest.raises(workhorse.NotInJobError, match=r"ctx.checkpoint\(\) was called outside"):
        context.checkpoint("stage", stage("x"))
    assert CALLS == []


def test_a_context_kept_after_its_run_cannot_checkpoint():
    kept = []

    @workhorse.job(queue="tests.durable.kept", name="tests.durable.kept")
    def keeps() -> None:
        kept.append(workhorse.current_job())

    keeps.enqueue()
    run_jobs(names=[keeps])

    with pytest.raises(workhorse.NotInJobError):
        kept[0].checkpoint("late", stage("late"))
    assert CALLS == []


def test_a_promoted_sleeping_job_wakes_early_and_its_sleep_returns_at_once():
    handle = naps.enqueue(seconds=3600)
    run_jobs(names=[naps], skip_waits=False)

    assert workhorse.Admin().promote(handle.id).changed
    run_jobs(names=[naps], skip_waits=False)

    assert handle.refresh().result == "awake"
    assert CALLS == ["before", "after"]


def test_a_sleeping_job_can_be_canceled_and_keeps_its_checkpoints():
    handle = naps.enqueue(seconds=3600)
    run_jobs(names=[naps], skip_waits=False)

    assert workhorse.Admin().cancel(handle.id).changed

    snapshot = handle.refresh().snapshot
    assert (snapshot.state, snapshot.sleeping_until) == ("canceled", None)
    assert [c.name for c in snapshot.checkpoints] == ["before", "nap"]


def test_a_run_that_sleeps_keeps_its_writes_as_in_a_worker():
    handle = writes_then_naps.enqueue()

    report = run_jobs(names=[writes_then_naps], skip_waits=False)

    assert [run.slept for run in report.runs] == [True]
    assert RunRecord.objects.filter(job_id=handle.id).count() == 1


def test_a_sleep_gives_its_attempt_back_so_a_canceled_sleeper_used_none():
    handle = naps.enqueue(seconds=3600)
    run_jobs(names=[naps], skip_waits=False)

    assert handle.refresh().attempts == 0
    assert workhorse.Admin().cancel(handle.id).changed
    assert handle.refresh().attempts == 0
    timeline = workhorse.Admin().get_job_timeline(handle.id).items
    assert [(e.kind, e.attempt) for e in timeline if e.source == "attempt"] == [("slept", 1)]


def test_a_sleeping_job_canceled_then_retried_skips_the_rest_of_its_sleep():
    handle = naps.enqueue(seconds=3600)
    run_jobs(names=[naps], skip_waits=False)
    assert workhorse.Admin().cancel(handle.id).changed

    assert workhorse.Admin().retry(handle.id).changed
    run_jobs(names=[naps], skip_waits=False)

    assert handle.refresh().result == "awake"
    assert CALLS == ["before", "after"]


def test_a_checkpoint_after_a_recorded_cancel_request_raises_job_cancelled(cursor):
    @workhorse.job(queue="tests.durable.cancel", name="tests.durable.cancel", max_attempts=3)
    def cancelled() -> None:
        ctx = workhorse.current_job()
        cursor.execute(
            "UPDATE workhorse_job_runtime SET cancel_requested = true WHERE job_id = %s",
            [ctx.job_id],
        )
        ctx.checkpoint("first", stage("first"))
        ctx.checkpoint("second", stage("second"))

    handle = cancelled.enqueue()

    report = run_jobs(names=[cancelled])

    assert isinstance(report.runs[0].error, workhorse.JobCanceledError)
    assert CALLS == ["first"]
    assert (handle.refresh().status, handle.attempts) == ("canceled", 1)  # not retried


@workhorse.job(queue="tests.durable", name="tests.durable.gathers")
async def gathers() -> list:
    import asyncio

    ctx = workhorse.current_job()

    async def one(label: str) -> str:
        CALLS.append(label)
        return label

    # Two checkpoints of one name at once, on the run's first use (the
    # journal is still being read when both start).
    done = await asyncio.gather(
        ctx.acheckpoint("same", lambda: one("x")),
        ctx.acheckpoint("same", lambda: one("y")),
        return_exceptions=True,
    )
    return [type(d).__name__ if isinstance(d, BaseException) else d for d in done]


def test_two_async_checkpoints_of_one_name_at_once_run_one_function():
    handle = gathers.enqueue()

    run_jobs(names=[gathers])

    assert handle.refresh().status == "succeeded"
    assert sorted(handle.result) == ["DuplicateCheckpointError", "x"]
    assert CALLS == ["x"]


@workhorse.job(queue="tests.durable.catches", name="tests.durable.catches")
def sleeps_inside_except_exception() -> str:
    try:
        workhorse.current_job().sleep("nap", 3600)
    except Exception:
        CALLS.append("caught")
        return "caught"
    return "awake"


def test_a_sleep_passes_through_an_except_exception_of_the_handler():
    handle = sleeps_inside_except_exception.enqueue()

    report = run_jobs(names=[sleeps_inside_except_exception], skip_waits=False)

    assert [r.slept for r in report] == [True]
    assert CALLS == []
    assert handle.refresh().status == "scheduled"


@workhorse.job(
    queue="tests.durable.async_misuse", name="tests.durable.async_misuse", max_attempts=3
)
async def acheckpoints_a_plain_function() -> None:
    await workhorse.current_job().acheckpoint("charge", stage("charge"))


def test_acheckpoint_of_a_plain_function_fails_the_job_without_retry_and_records_nothing(
    db_rows,
):
    handle = acheckpoints_a_plain_function.enqueue()

    report = run_jobs(names=[acheckpoints_a_plain_function])

    error = report.runs[0].error
    assert isinstance(error, workhorse.InvalidCheckpointError)
    assert "not an awaitable; pass an async function (async def)" in str(error)
    assert CALLS == ["charge"]  # ran once: the next attempt would refuse it again
    assert (handle.refresh().status, handle.attempts) == ("failed", 1)
    assert db_rows.checkpoints(handle.id) == []


async def _charge() -> dict:
    CALLS.append("charge")
    return {"charge": "ch_1"}


@workhorse.job(queue="tests.durable.sync_misuse", name="tests.durable.sync_misuse", max_attempts=3)
def checkpoints_an_async_function() -> None:
    workhorse.current_job().checkpoint("charge", _charge)


def test_checkpoint_of_an_async_function_points_to_acheckpoint_and_records_nothing(db_rows):
    handle = checkpoints_an_async_function.enqueue()

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the coroutine is closed, not left unawaited
        report = run_jobs(names=[checkpoints_an_async_function])

    error = report.runs[0].error
    assert isinstance(error, workhorse.InvalidCheckpointError)
    assert "_charge returned a coroutine, which must be awaited" in str(error)
    assert "await ctx.acheckpoint(name, afn)" in str(error)
    assert CALLS == []
    assert (handle.refresh().status, handle.attempts) == ("failed", 1)
    assert db_rows.checkpoints(handle.id) == []


@workhorse.job(queue="tests.durable.one_attempt", name="tests.durable.one_attempt", max_attempts=1)
def sleeps_three_times_on_one_attempt() -> int:
    ctx = workhorse.current_job()
    for name in ("first", "second", "third"):
        ctx.sleep(name, 60)
    return ctx.attempt


def test_sleeps_never_count_against_max_attempts():
    handle = sleeps_three_times_on_one_attempt.enqueue()

    report = run_jobs(names=[sleeps_three_times_on_one_attempt])

    assert [r.slept for r in report] == [True, True, True, False]
    assert (handle.refresh().status, handle.result, handle.attempts) == ("succeeded", 1, 1)


@workhorse.job(queue="tests.durable", name="tests.durable.sync_call_in_async", max_attempts=3)
async def sync_call_in_async(how: str) -> None:
    ctx = workhorse.current_job()
    if how == "checkpoint":
        ctx.checkpoint("stage", stage("x"))
    else:
        ctx.sleep("nap", 0)


@pytest.mark.parametrize("how", ["checkpoint", "sleep"])
def test_a_sync_checkpoint_or_sleep_in_an_async_handler_is_refused_naming_the_async_one(
    how, db_rows
):
    handle = sync_call_in_async.enqueue(how=how)

    report = run_jobs(names=[sync_call_in_async])

    error = report.runs[0].error
    assert isinstance(error, workhorse.InvalidCheckpointError)
    assert f"use await ctx.a{how}(...)" in str(error)
    assert (handle.refresh().status, handle.attempts) == ("failed", 1)  # not retried
    assert db_rows.checkpoints(handle.id) == [] and CALLS == []


def test_a_wake_time_in_a_zone_whose_offset_has_microseconds_is_taken():
    # Python allows any offset; PostgreSQL's text input of an array of
    # timestamptz refuses one with a fraction of a second.
    odd_zone = timezone(timedelta(hours=1, microseconds=1))

    @workhorse.job(queue="tests.durable.odd_zone", name="tests.durable.odd_zone")
    def odd() -> str:
        workhorse.current_job().sleep("nap", datetime(2000, 1, 1, tzinfo=odd_zone))
        return "awake"

    handle = odd.enqueue()

    report = run_jobs(names=[odd], skip_waits=False)

    assert [(r.slept, r.ok) for r in report] == [(True, False), (False, True)]
    assert handle.refresh().result == "awake"
