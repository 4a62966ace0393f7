"""``current_job()``: what the running job is, for any code a handler calls."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .exceptions import JobCancelled, NotInJobError

if TYPE_CHECKING:
    from .admin_api import JobSnapshot


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

    @property
    def cancel_requested(self) -> bool:
        """True once an operator asked to cancel this job."""
        return self._cancelled

    def _request_cancel(self) -> None:
        """Set by the worker when the heartbeat reports a cancel request; a
        plain attribute write, which any thread then reads."""
        object.__setattr__(self, "_cancelled", True)

    def raise_if_cancelled(self) -> None:
        """Raise JobCancelled when an operator asked to cancel this job.

        Sync handlers call this between steps; async handlers are cancelled.
        """
        if self._cancelled:
            raise JobCancelled(f"job {self.job_id} was cancelled by an operator")

    def prerequisites(self) -> list[JobSnapshot]:
        """The snapshots of the jobs this one depends on (``depends_on``), in
        id order, read now: their state, and their ``result`` once succeeded.
        Empty for a job without prerequisites. Two queries, whatever their number."""
        from .admin_api import Admin

        admin = Admin(using=self.using)
        own = admin.get_job(self.job_id)
        if own is None:
            return []
        return admin.get_jobs([link.id for link in own.prerequisites])


_current: contextvars.ContextVar[JobContext | None] = contextvars.ContextVar(
    "workhorse_current_job", default=None
)


def current_job() -> JobContext:
    """The job being run by the calling code; NotInJobError outside a job."""
    context = _current.get()
    if context is None:
        raise NotInJobError(
            "workhorse.current_job() was called outside a running job: it is only "
            "available to code called by a job handler that a worker runs"
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
