"""What ``Admin``'s reads and actions return: timeline entries, job rows and
pages, failure groups, queue statistics, workers, and what an action did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from ..core.limits import (
    shown,
)
from ..db.snapshots import Checkpoint as Checkpoint  # (the names' old home)
from ..db.snapshots import JobDependency as JobDependency
from ..states import JobState

LIVE_STATES = tuple(s.value for s in JobState.live())
TERMINAL_STATES = tuple(s.value for s in JobState.terminal())
STATES = LIVE_STATES + TERMINAL_STATES
"""Every state a job can be in, live first."""

MAX_PAGE = 1000
UNSET: Any = object()
"""A keyword argument not given (``set_queue_limits``'s old ``concurrency=``)."""
MAX_JOB_ID = 2**63 - 1
MAX_BUCKETS = 1000
"""Throughput slices of one ``queue_stats`` call (the dashboard draws 12)."""
INT4_MAX = 2**31 - 1

T = TypeVar("T")


@dataclass(frozen=True)
class TimelineEntry:
    """One row of a job's timeline: a closed attempt or a lifecycle event."""

    at: datetime
    """When it happened (an attempt is placed at its finish)."""
    source: Literal["attempt", "event"]
    kind: str
    """For an attempt its outcome (succeeded, failed, timed_out, stalled, canceled);
    for an event its kind (enqueued, claimed, retry_scheduled, retried, ...)."""
    attempt: int | None
    worker_id: str | None
    started_at: datetime | None
    """Attempts only: when the attempt was claimed."""
    finished_at: datetime | None
    error: dict[str, Any] | None
    """Attempts only: the error envelope (type, message, traceback) if it
    failed; its JSON text when Python cannot decode it (as in a snapshot)."""
    data: dict[str, Any] | None
    """Events only: the event's details; their JSON text when Python cannot
    decode them."""

    @property
    def duration(self) -> float | None:
        """Seconds an attempt ran; None for events."""
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


@dataclass(frozen=True)
class JobRow:
    """A job as the job list shows it."""

    id: int
    name: str
    queue: str
    state: str
    priority: int
    attempt: int
    max_attempts: int
    stall_count: int
    idempotency_key: str | None
    created_at: datetime
    run_at: datetime | None
    """Live jobs: when the job is (or was) due."""
    finished_at: datetime | None
    """Terminal jobs: when the job finished."""
    error_type: str | None = None
    """Failed and canceled jobs: the type of their error."""
    error_message: str | None = None
    """Failed and canceled jobs: their error's message, cut at 300 characters."""

    @property
    def is_terminal(self) -> bool:
        return self.state in TERMINAL_STATES


@dataclass(frozen=True)
class FailureGroup:
    """Jobs of one name that failed with one error type (``Admin.failures``)."""

    name: str
    error_type: str
    failures: int
    last_job_id: int
    """The newest of them."""
    last_at: datetime | None
    """When the newest failed; None when the counters hold a time Python
    cannot read (see ``unreadable``)."""
    unreadable: str | None = None
    """Set when the counters of the group hold what Python cannot read (a
    time outside the years 1 to 9999, written by hand): what, and the fix."""


@dataclass(frozen=True)
class Page(Generic[T]):
    """A page of a keyset-paged list. Cursors are opaque strings; pass one back
    as ``cursor=`` to get the page it points to. None means there is none."""

    items: list[T]
    next_cursor: str | None
    """The following page: later timeline rows, or older jobs."""
    previous_cursor: str | None = None
    """Job lists only: the page of newer jobs, when this page is not the first."""


@dataclass(frozen=True)
class QueueStats:
    """One queue on the dashboard."""

    name: str
    paused: bool
    counts: dict[str, int]
    """Every state: live states as they stand, terminal ones over the window."""
    oldest_ready_at: datetime | None
    oldest_ready_age: float | None
    """Seconds the longest-waiting ready job has been due; None when none is ready."""
    finished_per_bucket: list[int] = field(default_factory=list)
    """Jobs finished in each equal slice of the window, oldest first."""
    window_seconds: float = 3600.0
    capped: frozenset[str] = frozenset()
    """Live states whose count reached ``count_limit``: there are at least
    that many (the dashboard shows "1,000+")."""
    concurrency_limit: int | None = None
    """The queue's global concurrency limit (``Admin.set_queue_limits``), if any."""
    rate_limit: int | None = None
    """At most this many jobs started per ``rate_period`` seconds, if set."""
    rate_period: float | None = None

    @property
    def finished_in_window(self) -> int:
        return sum(self.finished_per_bucket)


@dataclass(frozen=True)
class WorkerInfo:
    """One worker process, as its heartbeats describe it (``Admin.live_workers``)."""

    worker_id: str
    host: str
    pid: int | None
    queues: dict[str, int]
    """Its queues and the slots it runs for each."""
    slots: int | None
    """Its slots; None when its row holds no whole number from 0 to
    2,147,483,647 there (see ``unreadable``)."""
    busy: int | None
    """Slots in use at its latest heartbeat; None as ``slots``."""
    version: str
    """The django-workhorse version it runs."""
    first_seen_at: datetime | None
    """None when its row holds a time outside the years 1 to 9999 (see
    ``unreadable``), as for ``last_seen_at``."""
    last_seen_at: datetime | None
    seen_seconds_ago: float | None
    """None when ``last_seen_at`` is."""
    silent: bool
    """Not heard from for three of its heartbeat turns (and 5 s): it died or
    lost the database; a worker that stops cleanly leaves the list instead.
    A worker whose last heartbeat time cannot be read counts as silent."""
    jobs_held: int = 0
    """Jobs whose lease it holds now (from the live rows)."""
    success_route: str = ""
    """How its successes reach the database, chosen once at its start from its
    slots: ``"one_slot"`` (with the next claim, on the handler's thread) or
    ``"batched"`` (in writer batches, or with the next claim when the last run
    going ends); empty for a worker that does not say (docs/worker.md)."""
    unreadable: str | None = None
    """Set when its row holds what Python cannot read or a worker never
    writes (only a hand-written row does: a time outside the years 1 to
    9999, slots that are not a whole number): what, and the fix. The fields
    it names are then None."""


@dataclass(frozen=True)
class BulkOutcome:
    """What a filter-wide action did (``Admin.bulk_matching``)."""

    action: str
    changed: int = 0
    """Jobs retried, or canceled at once."""
    requested: int = 0
    """Running jobs whose workers were asked to cancel them."""
    unchanged: int = 0
    """Jobs whose state no longer allowed the action when their batch came."""
    batches: int = 0
    """Transactions it took (each of at most ``batch_size`` jobs)."""
    complete: bool = True
    """False when ``limit`` stopped it with more jobs matching."""


MAX_SLOTS = 2**31 - 1
"""The most slots (or busy slots) a worker's row is read as having."""
MAX_RENEW_INTERVAL = 86400.0


def is_number(value: Any) -> bool:
    """An int or float of JSON, not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def slot_count(info: dict[str, Any], key: str, problems: list[str]) -> int | None:
    """A worker row's ``slots`` or ``busy``: a whole number from 0 to
    ``MAX_SLOTS`` as a worker writes it, or None with the problem added
    (a row written by hand, or by another program, may hold any JSON)."""
    value = info.get(key)
    if value is None:  # not said: none
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SLOTS:
        return value
    problems.append(f"{key} {shown(value, 40)} is not a whole number from 0 to {MAX_SLOTS:,}")
    return None


BULK_BATCH_SIZE = 1000
"""Jobs acted on per transaction by ``Admin.bulk_matching``."""

COUNT_CAP = 1000
"""The job list counts each state up to this many ("1,000+")."""


ActionStatus = Literal["changed", "requested", "unchanged", "unknown"]


@dataclass(frozen=True)
class ActionResult:
    """What an operator action did."""

    action: str
    target: int | str
    """The job id, or the queue name."""
    status: Literal["changed", "requested", "unchanged", "unknown"]
    """changed: done; requested: asked of the worker running the job (a cancel
    of a running job); unchanged: it already was so (or the state does not
    allow it); unknown: no such job."""
    state: str | None
    """The job's state (or 'paused'/'running' for a queue) after the call."""
    message: str
    """One sentence for the operator."""

    @property
    def changed(self) -> bool:
        return self.status == "changed"
