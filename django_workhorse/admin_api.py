"""``workhorse.Admin``: the operator's view of jobs, from Python."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connections

from . import store
from .conf import get_settings
from .exceptions import UnknownScheduleError
from .limits import queue_name_problem
from .states import JobState


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
    """The attempt running or last run; 0 before the first claim."""
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
    finished_at: datetime | None

    @property
    def is_terminal(self) -> bool:
        return self.state in JobState.terminal()


class Admin:
    """Reads and operator actions over the jobs of one database alias."""

    def __init__(self, using: str | None = None) -> None:
        self.using = using or get_settings().database

    def get_job(self, job_id: int) -> JobSnapshot | None:
        """The job's snapshot, or None when no job has this id."""
        with connections[self.using].cursor() as cursor:
            row = store.get_job(cursor, job_id)
        if row is None:
            return None
        row["id"] = row.pop("job_id")
        return JobSnapshot(**row)

    def pause_schedule(self, name: str) -> None:
        """Stop a repeatable schedule from enqueuing until ``resume_schedule``;
        UnknownScheduleError when there is no schedule ``name``."""
        self._set_schedule_paused(name, True)

    def resume_schedule(self, name: str) -> None:
        """Let a paused schedule enqueue again, from its first slot after now
        (the slots that passed while it was paused are not caught up)."""
        self._set_schedule_paused(name, False)

    def _set_schedule_paused(self, name: str, paused: bool) -> None:
        with connections[self.using].cursor() as cursor:
            found = store.set_schedule_paused(cursor, name, paused)
        if not found:
            raise UnknownScheduleError(
                f"no schedule named {name!r} in database {self.using!r}; schedules come from "
                "@workhorse.job(schedule=...) and WORKHORSE['SCHEDULES'] and are written when a "
                "worker starts"
            )

    def set_queue_limits(
        self,
        name: str,
        *,
        concurrency: int | None = None,
        rate: int | None = None,
        period: float | timedelta | None = None,
    ) -> store.QueueLimits:
        """Set the limits of queue ``name`` for every worker at once: at most
        ``concurrency`` active jobs, and at most ``rate`` jobs started per
        ``period`` (seconds or a timedelta). None removes that limit, so a
        call states the whole policy. The claim enforces both; idle workers
        are woken. Returns the limits in force and whether they ``changed``.

        Raises UnknownQueueError for a queue no registered job uses that
        ``WORKHORSE['QUEUES']`` does not name and that has no policy row,
        and InvalidQueueLimitError for a bad value. A worker that starts
        with limits in ``WORKHORSE['QUEUES'][name]`` sets those instead.
        """
        from django.db import transaction

        from .conf import duration_seconds, queue_limit_problems
        from .exceptions import InvalidQueueLimitError, UnknownQueueError
        from .models import Queue
        from .worker.options import known_queues

        if problem := queue_name_problem(name):
            raise UnknownQueueError(problem)
        problems = queue_limit_problems(concurrency, rate, period)
        if problems:
            text = "; ".join(problems).replace("'global_concurrency'", "concurrency")
            raise InvalidQueueLimitError(f"queue {name!r}: {text}")
        known = known_queues(self.using, get_settings())
        if name not in known and not Queue.objects.using(self.using).filter(name=name).exists():
            raise UnknownQueueError(
                f"unknown queue {name!r}: no job registered for database {self.using!r} uses it, "
                f"WORKHORSE['QUEUES'] does not name it and it has no policy yet "
                f"(known: {', '.join(known) or 'none'})"
            )
        seconds = duration_seconds(period) if period is not None else None
        with transaction.atomic(using=self.using), connections[self.using].cursor() as cursor:
            return store.set_queue_limits(cursor, name, concurrency, rate, seconds)
