"""``JobHandle``: what ``enqueue`` returns, and how far the job has got.

A handle is a small value (id, name, queue, whether this call inserted the
job, the database alias) that can also read the job's state. Like Django's
``TaskResult``, what it read stays as read until ``refresh()``: ``status``,
``result`` and ``error`` read the job once, on first use, and again only when
asked, so a handle in a loop never costs more queries than the loop asks for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from asgiref.sync import sync_to_async

from ..db import snapshots
from ..exceptions import JobNotFoundError
from ..states import JobState

if TYPE_CHECKING:
    from ..db.snapshots import JobSnapshot

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class JobHandle(Generic[R]):
    """What enqueue returns: the job's id, whether this call created it, and
    (read on demand) its state, result and error.

    ``inserted`` is False when an existing job already held the idempotency key;
    ``id`` is then that job's id. Two handles are equal when they name the same
    job the same way; what they have read does not count.
    """

    id: int
    name: str
    queue: str
    inserted: bool
    using: str
    _snapshot: JobSnapshot | None = field(default=None, compare=False, repr=False)

    def refresh(self) -> JobHandle[R]:
        """Read the job's current state from the database; returns the handle.

        Raises JobNotFoundError when the job is gone: its enqueue was rolled
        back, or it was enqueued in a transaction not yet committed that this
        connection cannot see.
        """
        snapshot = snapshots.read_job(self.using, self.id)
        if snapshot is None:
            raise JobNotFoundError(
                f"job {self.name!r} #{self.id} is not in database {self.using!r}: the "
                "transaction that enqueued it rolled back, or has not committed yet"
            )
        object.__setattr__(self, "_snapshot", snapshot)
        return self

    async def arefresh(self) -> JobHandle[R]:
        """``refresh()`` for async code (runs the query in Django's sync thread)."""
        await sync_to_async(self.refresh)()
        return self

    @property
    def snapshot(self) -> JobSnapshot:
        """Everything ``Admin().get_job`` knows about the job, as last read."""
        if self._snapshot is None:
            self.refresh()
        return self._snapshot  # type: ignore[return-value]

    @property
    def status(self) -> str:
        """blocked, scheduled, ready, active, succeeded, failed or canceled, as last read."""
        return self.snapshot.state

    @property
    def is_finished(self) -> bool:
        """True once the job succeeded, failed or was canceled (as last read)."""
        return self.status in JobState.terminal()

    @property
    def attempts(self) -> int:
        """The attempts used: the number of the attempt running, else of the
        last one that counted; 0 before the first claim. A durable sleep and a
        stall give their attempt back (neither counts against
        ``max_attempts``), so a job canceled while it slept after its first
        run shows 0; its history (``snapshot.attempts``) keeps that run."""
        return self.snapshot.current_attempt

    @property
    def result(self) -> R | None:
        """The handler's return value once the job succeeded; None before that
        and for a job that failed or was canceled."""
        snapshot = self.snapshot
        return snapshot.result if snapshot.state == JobState.SUCCEEDED else None

    @property
    def error(self) -> dict[str, Any] | None:
        """The error of a failed job, or of the last failed attempt of a job
        that will be retried: ``{"type", "message", "traceback"}``; None when
        no attempt has failed."""
        return self.snapshot.error
