"""``current_job()``: what the running job is, for any code a handler calls."""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, ClassVar, TypeVar

from asgiref.sync import sync_to_async

from . import durable
from .exceptions import JobCancelled, NotInJobError

if TYPE_CHECKING:
    from .admin_api import JobSnapshot

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
    # Set by the worker that runs the job: the owner name and fence its
    # checkpoints are written under, and where it gets a cursor for them.
    # One field, not three: the context is built for every run, and each
    # field of a frozen dataclass costs its own setattr.
    _run: durable.RunTicket | None = field(default=None, repr=False, compare=False)
    # The run's recorded stages, read on its first checkpoint or sleep. Not
    # a dataclass field: a run that never checkpoints never sets it.
    _journal: ClassVar[durable.Journal | None] = None
    # The end the worker recorded for this run while its handler still ran
    # (a sync handler past its timeout, a run acked canceled): the error it
    # recorded. Set once, by the worker's ledger; read when the handler
    # returns. Not a dataclass field either: almost no run sets it, and a
    # field would cost every run's context a setattr.
    _ended_with: ClassVar[BaseException | None] = None

    @property
    def cancel_requested(self) -> bool:
        """True once an operator asked to cancel this job."""
        return self._cancelled

    def _request_cancel(self) -> None:
        """Set by the worker when the heartbeat reports a cancel request; a
        plain attribute write, which any thread then reads."""
        object.__setattr__(self, "_cancelled", True)

    def _record_end(self, error: BaseException) -> None:
        """Set by the worker when it records this run's end (timed out or
        canceled) without waiting for the handler; a plain attribute write."""
        object.__setattr__(self, "_ended_with", error)

    def raise_if_cancelled(self) -> None:
        """Raise JobCancelled when an operator asked to cancel this job.

        Sync handlers call this between steps; async handlers are cancelled.
        """
        if self._cancelled:
            raise JobCancelled(f"job {self.job_id} was cancelled by an operator")

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
        is written), and ``JobCancelled`` once an operator asked to cancel
        the job. If the run has lost its job to another run (its lease
        expired), the write is refused and the run ends at once.
        """
        return durable.checkpoint(self, name, fn)

    async def acheckpoint(self, name: str, afn: Callable[[], Awaitable[T]]) -> T:
        """``checkpoint`` for async handlers: ``afn`` is awaited the first time."""
        return await durable.acheckpoint(self, name, afn)

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
        durable.sleep(self, name, until)

    async def asleep(self, name: str, until: float | timedelta | datetime) -> None:
        """``sleep`` for async handlers."""
        await durable.asleep(self, name, until)

    def prerequisites(self) -> list[JobSnapshot]:
        """The snapshots of the jobs this one depends on (``depends_on``), in
        id order, read now: their state, and their ``result`` once succeeded.
        Empty for a job without prerequisites. Two queries, whatever their number."""
        from .admin_api import Admin

        admin = Admin(using=self.using)
        # get_jobs, not get_job: the job's own checkpoints are not needed here.
        own = admin.get_jobs([self.job_id])
        if not own:
            return []
        return admin.get_jobs([link.id for link in own[0].prerequisites])

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
