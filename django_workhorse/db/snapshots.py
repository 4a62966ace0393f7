"""A job read back as it stands: ``JobSnapshot`` and what it holds.

``Admin().get_job``, ``JobHandle.refresh()``, ``ctx.prerequisites()`` and the
Tasks backend's results read jobs through ``read_job`` and ``read_jobs``, one
query each (and one more for a job's checkpoints).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from django.db import connections

from ..states import JobState
from . import store

TERMINAL_STATES = tuple(s.value for s in JobState.terminal())


@dataclass(frozen=True)
class JobDependency:
    """A job at the other end of a dependency, with its state when read."""

    id: int
    name: str | None
    """None when retention has deleted the job."""
    state: str | None
    """One of ``JobState``; None when retention has deleted the job."""


@dataclass(frozen=True)
class JobSnapshot:
    """One job as it stands, whichever side of the runtime/outcome split it is on."""

    id: int
    name: str
    queue: str
    payload: dict[str, Any]
    state: str
    """One of ``JobState``: blocked, scheduled, ready, active, succeeded, failed or canceled."""
    priority: int
    current_attempt: int
    """The attempt running, else the last one that counted; 0 before the first
    claim. A sleep or a stall gives its attempt back."""
    max_attempts: int
    stall_count: int
    run_at: datetime | None
    """When a live job becomes (or became) eligible; None once terminal."""
    worker_id: str | None
    lease_expires_at: datetime | None
    cancel_requested: bool
    result: Any
    """The handler's return value once succeeded."""
    error: dict[str, Any] | None
    """The terminal error, or the last attempt's error while retries remain."""
    idempotency_key: str | None
    created_at: datetime
    started_at: datetime | None
    """When the running attempt started, while the job is active; None
    otherwise (the starts of ended attempts are in its timeline,
    ``get_job_timeline``)."""
    finished_at: datetime | None
    dependency_policy: str | None = None
    """all_succeeded, all_finished or any_succeeded for a job enqueued with
    ``depends_on``; None for a job without prerequisites."""
    pending_dependencies: int = 0
    """Prerequisites a blocked job still waits for (0 once it is released)."""
    prerequisites: tuple[JobDependency, ...] = ()
    """Every job this one depends on, in id order, with its state."""
    dependents: tuple[JobDependency, ...] = ()
    """The first 100 jobs that depend on this one, in id order, with their states."""
    checkpoints: tuple[Checkpoint, ...] = ()
    """The job's recorded stages and sleeps, oldest first; kept after it ends,
    until retention deletes the job."""
    sleeping_until: datetime | None = None
    """The wake time of a job asleep in ``ctx.sleep`` (scheduled, with its
    run_at at the wake time the sleep recorded); None otherwise."""

    @property
    def is_terminal(self) -> bool:
        return self.state in TERMINAL_STATES


def snapshot_of(row: dict[str, Any], **extra: Any) -> JobSnapshot:
    """A JobSnapshot from a row of ``store.get_job`` / ``store.get_jobs``, with
    ``extra`` fields (checkpoints, sleeping_until) read separately."""
    row["id"] = row.pop("job_id")
    for key in ("prerequisites", "dependents"):
        row[key] = tuple(JobDependency(**link) for link in row[key])
    return JobSnapshot(**row, **extra)


@dataclass(frozen=True)
class Checkpoint:
    """A recorded stage (``ctx.checkpoint``) or sleep (``ctx.sleep``) of a job."""

    name: str
    kind: Literal["checkpoint", "sleep"]
    result: Any
    """The stage's stored result; for a sleep ``{"wake_at": "<ISO time>"}``."""
    written_at: datetime
    attempt: int
    """The attempt that recorded it."""


def read_job(using: str, job_id: int) -> JobSnapshot | None:
    """The snapshot of job ``job_id`` in database ``using``, with its
    checkpoints, or None when no job has this id."""
    with connections[using].cursor() as cursor:
        row = store.get_job(cursor, job_id)
        if row is None:
            return None
        stored = store.get_checkpoints(cursor, job_id)
    checkpoints = tuple(
        Checkpoint(c.name, c.kind, c.result, c.written_at, c.attempt)  # type: ignore[arg-type]
        for c in stored
    )
    sleeping_until = None
    if row["state"] == JobState.SCHEDULED:
        wakes = {c.wake_time() for c in stored}
        if row["run_at"] in wakes:
            sleeping_until = row["run_at"]
    return snapshot_of(row, checkpoints=checkpoints, sleeping_until=sleeping_until)


def read_jobs(using: str, job_ids: Sequence[int]) -> list[JobSnapshot]:
    """The snapshots of the jobs of ``job_ids`` that exist, in that order, in
    one query (without their checkpoints: ``read_job`` has them)."""
    if not job_ids:
        return []
    with connections[using].cursor() as cursor:
        return [snapshot_of(row) for row in store.get_jobs(cursor, list(job_ids))]
