"""The run context: ``current_job()``, and what ``ctx.checkpoint`` and ``ctx.sleep`` do.

``JobContext`` is the job a handler is running, set by whoever runs it (a
worker, ``run_jobs``) and read with ``workhorse.current_job()``.

A run's recorded stages are read once, on the first checkpoint or sleep the
run reaches (a job that never checkpoints never reads them), into a
``Journal`` kept on the job's context. A stage already recorded returns its
stored result without running; a new one runs, and its result is written
by ``workhorse_checkpoint_v1`` under the run's (owner, fence) before the
handler goes on. A sleep not yet taken ends the run: the worker records it
(``workhorse_sleep_many_v1``) and the job waits, holding no slot, until its
wake time; on the run after the wake-up the same sleep returns at once.
Once the run heard of a cancel, every checkpoint and sleep raises
``JobCanceledError``, a replayed one too.

Every check on the caller's input happens before any SQL, and a refused
input writes nothing. Reads and writes go through the cursor the run was
given (``RunTicket``): under a worker, its claim connection, in turn with the
claims; under ``run_jobs``, the test's connection. Async handlers make them
through ``sync_to_async`` (thread-sensitive, as Django's async ORM does), so
no database call runs on the event loop.
See docs/durable-execution.md.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import warnings
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, TypeVar, cast

from asgiref.sync import sync_to_async

from .core.limits import (
    MAX_DURATION_SECONDS,
    RUN_AT_END,
    RUN_AT_MIN,
    checkpoint_name_problem,
    run_at_problem,
    seconds_of,
)
from .core.payloads import encode_result
from .db import snapshots, store
from .exceptions import (
    DuplicateCheckpointError,
    InvalidCheckpointError,
    InvalidPayloadError,
    JobCanceledError,
    NotInJobError,
)

if TYPE_CHECKING:
    from .db.snapshots import JobSnapshot
    from .worker.outcomes import Recorded

T = TypeVar("T")


@dataclass(frozen=True)
class JobContext:
    """The job a handler is running. Read it with ``workhorse.current_job()``."""

    job_id: int
    """The job's id (``workhorse_job.id``)."""
    name: str
    """The job type's registered name."""
    queue: str
    """The queue this run was claimed from."""
    attempt: int
    """1-based number of this attempt; stalls and releases do not count."""
    max_attempts: int
    """Total attempts allowed for this job."""
    worker_id: str = ""
    """The id of the worker process running this attempt."""
    using: str = "default"
    """The database alias the job lives in."""
    _cancelled: bool = field(default=False, repr=False, compare=False)
    # Set by whoever runs the job (a worker, run_jobs): the owner name and
    # fence its checkpoints are written under, and where it gets a cursor
    # for them.
    # One field, not three: the context is built for every run, and each
    # field of a frozen dataclass costs its own setattr.
    _run: RunTicket | None = field(default=None, repr=False, compare=False)
    # The run's recorded stages, read on its first checkpoint or sleep. Not
    # a dataclass field: a run that never checkpoints never sets it.
    _journal: ClassVar[Journal | None] = None
    # The end the worker recorded for this run while its handler still ran
    # (a sync handler past its timeout, a run acked canceled): the error it
    # recorded. Set once, by the executor's mark_timeout or canceled, for
    # whoever noticed (the worker's ledger or event loop, run_jobs' timer);
    # read when the handler returns. Not a dataclass field either: almost no run sets it, and a
    # field would cost every run's context a setattr.
    _ended_with: ClassVar[BaseException | None] = None
    # What the handler's code asked to be called once this run's end is
    # recorded (the Tasks backend's task_finished), in the instance's dict
    # under "_after_recorded": set before the handler returns, taken once by
    # whoever records the end. Not a field, as above.
    _recorded: ClassVar[Recorded | None] = None
    # What the database recorded for this run, kept for that call when the
    # end was written while the handler still ran (a timeout, an acked
    # cancel) or a call waits for it; set by the run's writer
    # (worker/report.py) before it tells the worker the write landed.

    @property
    def cancel_requested(self) -> bool:
        """True once an operator asked to cancel this job."""
        return self._cancelled

    def _request_cancel(self) -> None:
        """Set by the worker when the heartbeat reports a cancel request; a
        plain attribute write, which any thread then reads."""
        object.__setattr__(self, "_cancelled", True)

    def _lose(self, error: LeaseLost) -> None:
        """Set by the worker when this run no longer holds its job (its lease
        was refused, or the worker could not prove itself alive in time):
        the handler's next checkpoint, sleep or ``raise_if_canceled()``
        raises ``error``; a plain attribute write, which any thread reads."""
        object.__setattr__(self, "_lost", error)

    def _record_end(self, error: BaseException) -> None:
        """Set by the worker when it records this run's end (timed out or
        canceled) without waiting for the handler; a plain attribute write."""
        object.__setattr__(self, "_ended_with", error)

    def _call_when_recorded(self, call: Callable[[Recorded | None], object]) -> None:
        """Have ``call`` made after the run's end is written to the database
        (by a worker on its hook thread, by ``run_jobs`` in its own thread),
        never before, with what was recorded (None: this run recorded
        nothing, its job is another run's now)."""
        object.__setattr__(self, "_after_recorded", call)

    def _note_recorded(self, recorded: Recorded | None) -> None:
        """Keep what the database recorded for this run, for the call above."""
        object.__setattr__(self, "_recorded", recorded)

    def _take_after_recorded(self, unnoted: Recorded | None) -> Callable[[], object] | None:
        """The call set by ``_call_when_recorded``, bound to what was
        recorded (``unnoted`` when ``_note_recorded`` was not called), once:
        a dict pop, atomic, so of two threads that record the run's end only
        one gets it."""
        call = self.__dict__.pop("_after_recorded", None)
        if call is None:
            return None
        recorded = self.__dict__.get("_recorded", unnoted)
        return functools.partial(call, recorded)

    def _awaits_recorded(self) -> bool:
        """Whether a call is waiting for the run's end to be recorded."""
        return "_after_recorded" in self.__dict__

    def raise_if_canceled(self) -> None:
        """Raise ``JobCanceledError`` when an operator asked to cancel this
        job (``LeaseLost`` when the run no longer holds it).

        Sync handlers call this between steps; async handlers are cancelled
        by asyncio.
        """
        lost = self.__dict__.get("_lost")
        if lost is not None:
            raise lost
        if self._cancelled:
            raise JobCanceledError(f"job {self.job_id} was canceled by an operator")

    def raise_if_cancelled(self) -> None:
        """Deprecated: ``raise_if_canceled`` (one spelling of cancel in the
        public names, the one of the ``canceled`` state)."""
        warnings.warn(
            "ctx.raise_if_cancelled() is deprecated: call ctx.raise_if_canceled()",
            DeprecationWarning,
            stacklevel=2,
        )
        self.raise_if_canceled()

    def checkpoint(self, name: str, fn: Callable[[], T]) -> T:
        """Run ``fn`` once for this job and return its result.

        The first run that gets here calls ``fn()`` and records its JSON
        result under ``name`` before going on; every later run of the job
        (a retry, a recovery after a crash, the run after a sleep) gets the
        recorded result back without calling ``fn``. A crash while ``fn``
        runs, before the result is recorded, runs ``fn`` again.

        Raises ``InvalidCheckpointError`` for a bad name or a result that is
        not JSON, ``DuplicateCheckpointError`` for a name this run already
        used, ``NotInJobError`` outside the running job (all before anything
        is written), and ``JobCanceledError`` once an operator asked to cancel
        the job. If the run has lost its job to another run (its lease
        expired), the write is refused and the run ends at once.
        """
        return checkpoint(self, name, fn)

    async def acheckpoint(self, name: str, afn: Callable[[], Awaitable[T]]) -> T:
        """``checkpoint`` for async handlers: ``afn`` is awaited the first time."""
        return await acheckpoint(self, name, afn)

    def sleep(self, name: str, until: float | timedelta | datetime) -> None:
        """Wait durably: ``until`` is seconds or a timedelta from now, or an
        aware datetime.

        The first time a run gets here the run ends: the job goes back to
        ``scheduled`` with ``run_at`` at the wake time, holding no worker
        slot and consuming no attempt, and survives any worker restart. When
        it wakes, the handler runs again from the top: its checkpoints
        replay, and this call, with the same ``name``, returns at once.
        Code after a sleep that is not inside a checkpoint runs only after it.

        Errors are those of ``checkpoint`` (name, duplicate, outside a job),
        and ``InvalidCheckpointError`` for a wake time that is not valid.
        """
        sleep(self, name, until)

    async def asleep(self, name: str, until: float | timedelta | datetime) -> None:
        """``sleep`` for async handlers."""
        await asleep(self, name, until)

    def prerequisites(self) -> list[JobSnapshot]:
        """The snapshots of the jobs this one depends on (``depends_on``), in
        id order, read now: their state, and their ``result`` once succeeded.
        Empty for a job without prerequisites. Two queries, whatever their number."""
        # read_jobs, not read_job: the job's own checkpoints are not needed here.
        own = snapshots.read_jobs(self.using, [self.job_id])
        if not own:
            return []
        return snapshots.read_jobs(self.using, [link.id for link in own[0].prerequisites])

    async def aprerequisites(self) -> list[JobSnapshot]:
        """``prerequisites`` for async handlers: the same two queries, run
        through ``sync_to_async`` as Django's async ORM calls are (a sync
        database call on the event loop is refused by Django)."""
        return await sync_to_async(self.prerequisites)()


_current: contextvars.ContextVar[JobContext | None] = contextvars.ContextVar(
    "workhorse_current_job", default=None
)


def current_job() -> JobContext:
    """The job being run by the calling code; NotInJobError outside a job."""
    context = _current.get()
    if context is None:
        raise NotInJobError(
            "workhorse.current_job() was called outside a running job: it is only "
            "available to code called by a job handler that a worker or run_jobs() "
            "runs, not when the job definition is called directly"
        )
    return context


def set_current(context: JobContext | None) -> contextvars.Token[JobContext | None]:
    """Make ``context`` the current job; returns the token for ``reset_current``."""
    return _current.set(context)


def reset_current(token: contextvars.Token[JobContext | None]) -> None:
    _current.reset(token)


def peek_current() -> JobContext | None:
    """The current job or None, without raising (for log filters)."""
    return _current.get()


# -- checkpoints and durable sleep --------------------------------------------


CHECKPOINT = "checkpoint"
SLEEP = "sleep"


class RunEnded(BaseException):
    """Ends a run from inside its handler; the worker handles it.

    A ``BaseException``, like ``GeneratorExit``: a handler's ``except
    Exception`` must not swallow it and go on as if the run still held its job.
    """


class SleepRequested(RunEnded):
    """``ctx.sleep`` met a sleep not yet taken: the worker puts the job to sleep."""

    def __init__(self, name: str, wake_at: datetime | None, delay: float | None) -> None:
        super().__init__(f"sleep {name!r}")
        self.name = name
        self.wake_at = wake_at
        """The wake time asked for, or None with ``delay``."""
        self.delay = delay
        """Seconds from the write, on the database clock, or None with ``wake_at``."""


class LeaseLost(RunEnded):
    """The database refused a checkpoint: this run no longer holds its job
    (its lease expired and another run took it, or the job ended)."""

    def __init__(self, what: str, message: str | None = None) -> None:
        super().__init__(message or f"the {what} was refused: the run no longer holds the job")
        self.what = what


class RunTicket(NamedTuple):
    """What a run's checkpoints are written with (``JobContext._run``)."""

    owner: str
    """The owner name the job was claimed under."""
    fence: int
    cursor: Callable[[], AbstractContextManager[Any]]
    """Where a cursor for them comes from: under a worker, its claim
    connection (``worker/connection.py``), outside the handler's own
    transactions; under ``run_jobs``, the test's own connection."""


def claimed_context(
    job: store.ClaimedJob,
    *,
    worker_id: str,
    using: str,
    owner: str,
    cursor: Callable[[], AbstractContextManager[Any]],
) -> JobContext:
    """The context of a run of ``job``, claimed under ``owner``: built here
    for a worker and for ``run_jobs`` alike, so a handler sees the same
    context whichever runs it. ``cursor`` gives the run's checkpoint writes a
    cursor outside the handler's own transactions."""
    return JobContext(
        job_id=job.job_id,
        name=job.name,
        queue=job.queue,
        attempt=job.attempt,
        max_attempts=job.max_attempts,
        worker_id=worker_id,
        using=using,
        _run=RunTicket(owner, job.fence, cursor),
    )


@dataclass
class Journal:
    """The recorded stages of one run's job, and the names this run used."""

    stored: dict[str, store.CheckpointRow]
    used: set[str] = field(default_factory=set)
    written: dict[str, str] = field(default_factory=dict)
    """The stages this run recorded, as the JSON text written."""


def _on_event_loop() -> bool:
    """Whether this thread is running an asyncio event loop now."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _check_call(ctx: JobContext, what: str, kind: str, name: object) -> None:
    """The run may record ``name`` now; raises before any SQL when it may not."""
    if ctx._run is None or peek_current() is not ctx:
        raise NotInJobError(
            f"ctx.{what}() was called outside a running job: call it from the job's "
            "handler (or code it calls) while a worker runs the job"
        )
    if what in ("checkpoint", "sleep") and _on_event_loop():
        # The write would block every task of the loop while it waits for
        # the database (and Django refuses it outright in async code).
        raise InvalidCheckpointError(
            f"ctx.{what}() was called on an event loop (an async handler): "
            f"use await ctx.a{what}(...) there"
        )
    problem = checkpoint_name_problem(name, kind)
    if problem:
        raise InvalidCheckpointError(f"ctx.{what}(): {problem}")
    journal = ctx._journal
    if journal is not None:
        _refuse_reuse(ctx, what, journal, name)


def _refuse_reuse(ctx: JobContext, what: str, journal: Journal, name: object) -> None:
    if name in journal.used:
        raise DuplicateCheckpointError(
            f"ctx.{what}(): the name {name!r} was already used in this run of job "
            f"{ctx.name!r} #{ctx.job_id}; give every checkpoint and sleep of a job its own name"
        )


def _load(ctx: JobContext) -> Journal:
    """The run's journal, reading the job's recorded stages on first use."""
    journal = ctx._journal
    if journal is None:
        assert ctx._run is not None, "_check_call saw the run"
        with ctx._run.cursor() as cursor:
            rows = store.get_checkpoints(cursor, ctx.job_id)
        journal = Journal({row.name: row for row in rows})
        object.__setattr__(ctx, "_journal", journal)
    return journal


def _replay(
    ctx: JobContext, journal: Journal, what: str, kind: str, name: str
) -> store.CheckpointRow | None:
    """The stored row of ``name`` (marking the name used), or None.

    Checked again here, with no await between the check and the mark: two
    async checkpoints of one name started together (``asyncio.gather``)
    both passed the first check while the journal was being read."""
    _refuse_reuse(ctx, what, journal, name)
    journal.used.add(name)
    row = journal.stored.get(name)
    if row is not None and row.kind != kind:
        raise InvalidCheckpointError(
            f"ctx.{kind}({name!r}): job {ctx.name!r} #{ctx.job_id} recorded {name!r} as a "
            f"{row.kind} in an earlier run; a checkpoint and a sleep cannot share a name"
        )
    if row is not None and row.unreadable is not None:
        # Its JSON text is not the value fn returned: handing it on as the
        # result would let the handler go on with the wrong data. Refused,
        # and never retried: every run would read the same row.
        raise InvalidCheckpointError(
            f"ctx.{what}({name!r}) of job {ctx.name!r} #{ctx.job_id}: the stored result of "
            f"{row.unreadable}; it was written outside Python, and this job cannot replay it"
        )
    return row


def _encode(ctx: JobContext, name: str, value: Any) -> str:
    try:
        return encode_result(value)
    except InvalidPayloadError as exc:
        message = str(exc).replace("the return value", "the result").split("; return")[0]
        raise InvalidCheckpointError(
            f"ctx.checkpoint({name!r}) of job {ctx.name!r} #{ctx.job_id}: {message}; "
            "return JSON-friendly data from a checkpoint's function (nothing was recorded)"
        ) from None


def _write(ctx: JobContext, journal: Journal, name: str, encoded: str) -> None:
    """Record the stage under the run's fence; a refusal ends the run."""
    assert ctx._run is not None, "_check_call saw the run"
    owner, fence, cursor_of = ctx._run
    with cursor_of() as cursor:
        ok, cancel_requested = store.write_checkpoint(
            cursor, ctx.job_id, owner, fence, name, encoded
        )
    if not ok:
        raise LeaseLost(f"checkpoint {name!r}")
    journal.written[name] = encoded
    if cancel_requested:
        ctx._request_cancel()
        raise JobCanceledError(f"job {ctx.job_id} was canceled by an operator")


def checkpoint(ctx: JobContext, name: str, fn: Callable[[], T]) -> T:
    _check_call(ctx, "checkpoint", CHECKPOINT, name)
    if not callable(fn):
        raise InvalidCheckpointError(
            f"ctx.checkpoint({name!r}, fn): fn must be a function taking no arguments, "
            f"got {type(fn).__name__}"
        )
    journal = _load(ctx)
    row = _replay(ctx, journal, "checkpoint", CHECKPOINT, name)
    # A cancel heard before this point ends the run here, replay or not: a
    # recorded stage must not carry a cancelled run on to the next one.
    ctx.raise_if_canceled()
    if row is not None:
        return cast(T, row.result)
    value = fn()
    if inspect.isawaitable(value):
        # An async function's result is not known until awaited, and a sync
        # handler cannot await it: refused (never retried, it would be again).
        if inspect.iscoroutine(value):
            value.close()  # no "never awaited" warning on top of the error
        raise InvalidCheckpointError(
            f"ctx.checkpoint({name!r}) of job {ctx.name!r} #{ctx.job_id}: {_named(fn)} "
            f"returned a {type(value).__name__}, which must be awaited; record an async "
            "function's result with await ctx.acheckpoint(name, afn) in an async handler "
            "(nothing was recorded)"
        )
    _write(ctx, journal, name, _encode(ctx, name, value))
    return value


def _named(fn: object) -> str:
    """The function a message names (a lambda's name is '<lambda>')."""
    return str(getattr(fn, "__qualname__", type(fn).__name__))


async def acheckpoint(ctx: JobContext, name: str, afn: Callable[[], Awaitable[T]]) -> T:
    _check_call(ctx, "acheckpoint", CHECKPOINT, name)
    if not callable(afn):
        raise InvalidCheckpointError(
            f"ctx.acheckpoint({name!r}, afn): afn must be an async function taking no "
            f"arguments, got {type(afn).__name__}"
        )
    journal = ctx._journal
    if journal is None:
        journal = await sync_to_async(_load)(ctx)
    row = _replay(ctx, journal, "acheckpoint", CHECKPOINT, name)
    ctx.raise_if_canceled()  # as in checkpoint(): before a replayed result too
    if row is not None:
        return cast(T, row.result)
    awaitable = afn()
    if not inspect.isawaitable(awaitable):
        # A plain function ran already; its result is not recorded, and the
        # attempt is not retried: the next one would run it and refuse again.
        raise InvalidCheckpointError(
            f"ctx.acheckpoint({name!r}) of job {ctx.name!r} #{ctx.job_id}: {_named(afn)} "
            f"returned a value of type {type(awaitable).__name__}, not an awaitable; pass an async "
            "function (async def) to acheckpoint, or use ctx.checkpoint in a sync handler "
            "(nothing was recorded)"
        )
    value = await awaitable
    encoded = _encode(ctx, name, value)
    await sync_to_async(_write)(ctx, journal, name, encoded)
    return value


def _wake(ctx: JobContext, what: str, name: str, when: object) -> SleepRequested:
    """The sleep asked for, checked: a wake time or a delay from now."""
    if isinstance(when, datetime):
        problem = run_at_problem(when)
        if problem is None and not RUN_AT_MIN <= when <= RUN_AT_END:
            problem = f"{when!r} is outside the years 1 to 9999"
        if problem:
            problem = problem.replace("run_at", "the wake time")
            raise InvalidCheckpointError(f"ctx.{what}({name!r}, ...): {problem}")
        # In UTC: PostgreSQL's input of a timestamptz array refuses an offset
        # with a fraction of a second, which Python's zones allow.
        return SleepRequested(name, when.astimezone(UTC), None)
    try:
        seconds = seconds_of(when)
    except ValueError as exc:
        raise InvalidCheckpointError(
            f"ctx.{what}({name!r}, ...): {exc}; pass seconds, a timedelta or an aware datetime"
        ) from None
    if not 0 <= seconds <= MAX_DURATION_SECONDS:
        raise InvalidCheckpointError(
            f"ctx.{what}({name!r}, ...): the delay must be 0 to {MAX_DURATION_SECONDS} "
            f"seconds (100 years), got {seconds!r}"
        )
    return SleepRequested(name, None, seconds)


def sleep(ctx: JobContext, name: str, when: float | timedelta | datetime) -> None:
    _check_call(ctx, "sleep", SLEEP, name)
    request = _wake(ctx, "sleep", name, when)
    replayed = _replay(ctx, _load(ctx), "sleep", SLEEP, name) is not None
    ctx.raise_if_canceled()  # a sleep already taken returns only to a run not cancelled
    if replayed:
        return
    raise request


async def asleep(ctx: JobContext, name: str, when: float | timedelta | datetime) -> None:
    _check_call(ctx, "asleep", SLEEP, name)
    request = _wake(ctx, "asleep", name, when)
    journal = ctx._journal
    if journal is None:
        journal = await sync_to_async(_load)(ctx)
    replayed = _replay(ctx, journal, "asleep", SLEEP, name) is not None
    ctx.raise_if_canceled()
    if replayed:
        return
    raise request
