"""``workhorse.Admin``: the operator's view of jobs, from Python.

Reads (a job's snapshot, its timeline, pages of jobs, queue statistics) and
operator actions (retry, promote, cancel, pause and resume a queue) over the
jobs of one database alias. Every read is one SQL function built to stay fast
with millions of jobs; every action is one SQL function that says what it did.
The Django admin pages are built on this class and nothing else.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, Literal, TypeVar, cast

from django.core import signing
from django.db import connections, transaction

from ..core import registry
from ..core.conf import get_retention, get_settings
from ..core.limits import (
    JOB_NAME_RE,
    MAX_DURATION_SECONDS,
    MIN_INTERVAL_SECONDS,
    QUEUE_NAME_RE,
    RUN_AT_END,
    RUN_AT_MIN,
    seconds_of,
    shown,
    text_problem,
)
from ..core.payloads import search_problem
from ..db import snapshots, store
from ..db.snapshots import Checkpoint as Checkpoint  # (the names' old home)
from ..db.snapshots import JobDependency as JobDependency
from ..db.snapshots import JobSnapshot
from ..exceptions import InvalidCursorError, InvalidQueryError, UnknownScheduleError
from ..states import JobState
from . import bulk_actions
from .bulk_actions import ACTION_STATES, OPERATOR_QUEUE, BulkAction

LIVE_STATES = tuple(s.value for s in JobState.live())
TERMINAL_STATES = tuple(s.value for s in JobState.terminal())
STATES = LIVE_STATES + TERMINAL_STATES
"""Every state a job can be in, live first."""

MAX_PAGE = 1000
_UNSET: Any = object()
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


_MAX_SLOTS = 2**31 - 1
"""The most slots (or busy slots) a worker's row is read as having."""
_MAX_RENEW_INTERVAL = 86400.0


def _is_number(value: Any) -> bool:
    """An int or float of JSON, not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _slot_count(info: dict[str, Any], key: str, problems: list[str]) -> int | None:
    """A worker row's ``slots`` or ``busy``: a whole number from 0 to
    ``_MAX_SLOTS`` as a worker writes it, or None with the problem added
    (a row written by hand, or by another program, may hold any JSON)."""
    value = info.get(key)
    if value is None:  # not said: none
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_SLOTS:
        return value
    problems.append(f"{key} {shown(value, 40)} is not a whole number from 0 to {_MAX_SLOTS:,}")
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


def _check_job_id(job_id: object) -> int:
    if isinstance(job_id, bool) or not isinstance(job_id, int) or not 1 <= job_id <= MAX_JOB_ID:
        raise InvalidQueryError(
            f"a job id is a whole number from 1 to {MAX_JOB_ID}, got {shown(job_id, 40)}"
        )
    return job_id


def _check_job_ids(job_ids: object) -> list[int]:
    """Every id of a list of job ids, checked before any of them is read or
    acted on, so that one bad id leaves every job as it was."""
    if isinstance(job_ids, str | bytes | Mapping) or not isinstance(job_ids, Iterable):
        raise InvalidQueryError(
            "job ids are a list of whole numbers, got "
            f"{type(job_ids).__name__} {shown(job_ids, 40)}"
        )
    return [_check_job_id(job_id) for job_id in job_ids]


def check_queue_name(queue: object) -> str:
    """``queue`` if it is a valid queue name, else InvalidQueryError naming the rule."""
    if not isinstance(queue, str) or not QUEUE_NAME_RE.fullmatch(queue):
        raise InvalidQueryError(
            f"{shown(queue)} is not a queue name: use 1 to 53 letters, digits, '_', '.' and '-', "
            "not starting with '.' or '-'"
        )
    return queue


def _check_job_name(name: object) -> str:
    if not isinstance(name, str) or not JOB_NAME_RE.fullmatch(name):
        raise InvalidQueryError(
            f"{shown(name)} is not a job name: use 1 to 200 letters, digits, '_', '.', ':' "
            "and '-', "
            "starting with a letter or '_'"
        )
    return name


def _check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidQueryError(
            f"limit must be a whole number from 1 to {MAX_PAGE}, got {shown(limit, 40)}"
        )
    return limit


def _check_time(key: str, value: object) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidQueryError(f"{key} must be a timezone-aware datetime, got {shown(value)}")
    # In UTC: PostgreSQL refuses an offset with a fraction of a second, which
    # Python's zones allow (and the refusal aborted the caller's transaction).
    try:
        return value.astimezone(UTC)
    except OverflowError:
        # Before year 1 or after 9999 in UTC: no job was created there.
        return RUN_AT_MIN if value.year == 1 else RUN_AT_END


_BAD_CURSOR = (
    "the cursor {cursor} was not issued by this server for this list (changed, cut "
    "short, or from another list): start again from the first page"
)


BIGINT_MAX = 2**63 - 1


def _check_filters(
    queue: object, name: object, state: object, created_after: object, created_before: object
) -> tuple[datetime | None, datetime | None]:
    """The job list's filters checked (InvalidQueryError naming a bad one);
    the two times as the query takes them."""
    if queue is not None:
        check_queue_name(queue)
    if name is not None:
        _check_job_name(name)
    if state is not None and state not in STATES:
        raise InvalidQueryError(f"state must be one of {', '.join(STATES)}; got {shown(state)}")
    return _check_time("created_after", created_after), _check_time(
        "created_before", created_before
    )


def _check_window(key: str, value: object) -> float:
    """``value`` (seconds or a timedelta) as seconds, from 1 microsecond to
    100 years; else InvalidQueryError naming ``key``."""
    try:
        seconds = seconds_of(value)
    except ValueError as exc:
        raise InvalidQueryError(f"{key}: {exc}") from None
    if not MIN_INTERVAL_SECONDS <= seconds <= MAX_DURATION_SECONDS:
        raise InvalidQueryError(
            f"{key} must be more than 0 (at least 1 microsecond) and at most "
            f"{MAX_DURATION_SECONDS} (100 years), got {shown(value, 40)}"
        )
    return seconds


def _is_id(value: object) -> bool:
    """A row id as a cursor may carry it: an int in bigint's positive range."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= BIGINT_MAX


def list_cursor(direction: str, job_id: int, **filters: object) -> str:
    """The signed cursor of a job-list page: ``direction`` ("older" or
    "newer") from ``job_id``, bound to the list's filters (the keyword
    arguments of ``Admin.list_jobs``) so that a list with other filters
    refuses it."""
    signed: str = signing.dumps([direction, job_id, _filters_key(filters)], salt="workhorse.jobs")
    return signed


def _filters_key(filters: dict[str, object]) -> str:
    named = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in filters.items()}
    text = json.dumps({k: v for k, v in sorted(named.items()) if v is not None})
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _load_cursor(cursor: str, salt: str) -> Any:
    if not isinstance(cursor, str) or len(cursor) > 500:
        raise InvalidCursorError(_BAD_CURSOR.format(cursor=shown(cursor, 40)))
    try:
        return signing.loads(cursor, salt=salt)
    except (signing.BadSignature, ValueError, TypeError) as exc:
        raise InvalidCursorError(_BAD_CURSOR.format(cursor=shown(cursor, 40))) from exc


class Admin:
    """Reads and operator actions over the jobs of one database alias."""

    def __init__(self, using: str | None = None) -> None:
        self.using = using or get_settings().database
        if not isinstance(self.using, str) or self.using not in connections.databases:
            raise InvalidQueryError(
                f"using must be an alias of settings.DATABASES "
                f"({', '.join(connections.databases)}), got {shown(self.using)}"
            )

    # -- reads --------------------------------------------------------------

    def get_job(self, job_id: int) -> JobSnapshot | None:
        """The job's snapshot, or None when no job has this id."""
        return snapshots.read_job(self.using, _check_job_id(job_id))

    def get_jobs(self, job_ids: Sequence[int]) -> list[JobSnapshot]:
        """The snapshots of the jobs of ``job_ids`` that exist, in that order,
        read in one query (without their checkpoints: ``get_job`` has them)."""
        return snapshots.read_jobs(self.using, _check_job_ids(job_ids))

    def pause_schedule(self, name: str) -> None:
        """Stop a repeatable schedule from enqueuing until ``resume_schedule``;
        UnknownScheduleError when there is no schedule ``name``."""
        self._set_schedule_paused(name, True)

    def resume_schedule(self, name: str) -> None:
        """Let a paused schedule enqueue again, from its first slot after now
        (the slots that passed while it was paused are not caught up)."""
        self._set_schedule_paused(name, False)

    def list_schedules(self) -> list[store.ScheduleRow]:
        """Every repeatable schedule and its next run (None: not planned until
        the next sweep), by name."""
        with connections[self.using].cursor() as cursor:
            return store.list_schedules(cursor)

    def _set_schedule_paused(self, name: str, paused: bool) -> None:
        if not isinstance(name, str) or not name:
            raise InvalidQueryError(f"a schedule name is a non-empty string, got {shown(name)}")
        if problem := text_problem(name, "the schedule name"):
            raise InvalidQueryError(problem)
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
        global_concurrency: int | None = None,
        rate: int | None = None,
        period: float | timedelta | None = None,
        concurrency: Any = _UNSET,
    ) -> store.QueueLimits:
        """Set the limits of queue ``name`` for every worker at once: at most
        ``global_concurrency`` active jobs across the fleet, and at most
        ``rate`` jobs started per ``period`` (seconds or a timedelta). None
        removes that limit, so a call states the whole policy. The claim
        enforces both; idle workers are woken. Returns the limits in force
        and whether they ``changed``.

        ``concurrency=`` is the old name of ``global_concurrency`` (it warns:
        ``concurrency`` everywhere else means slots per worker).

        Raises UnknownQueueError for a queue neither this code nor this
        database knows (no job registered for this database uses it,
        ``WORKHORSE['QUEUES']`` does not name it, it has no policy row and no
        job of it is stored), InvalidQueueLimitError for a bad value, and
        InvalidQueryError for a malformed name. A worker that starts
        with limits in ``WORKHORSE['QUEUES'][name]`` sets those instead.
        """
        from django.db import transaction

        from ..core.conf import duration_seconds, queue_limit_problems
        from ..exceptions import InvalidQueueLimitError

        if concurrency is not _UNSET:
            if global_concurrency is not None:
                raise TypeError(
                    "set_queue_limits() got both global_concurrency= and concurrency= (its "
                    "old name): pass global_concurrency= alone"
                )
            warnings.warn(
                "set_queue_limits(concurrency=...) is deprecated: call it global_concurrency=, "
                "the cap on the queue's active jobs across every worker (concurrency elsewhere "
                "means slots per worker)",
                DeprecationWarning,
                stacklevel=2,
            )
            global_concurrency = concurrency
        name = check_queue_name(name)  # malformed: InvalidQueryError, as pause_queue
        problems = queue_limit_problems(global_concurrency, rate, period)
        if problems:
            raise InvalidQueueLimitError(f"queue {name!r}: {'; '.join(problems)}")
        self._require_known_queue(name)
        seconds = duration_seconds(period) if period is not None else None
        with transaction.atomic(using=self.using), connections[self.using].cursor() as cursor:
            return store.set_queue_limits(cursor, name, global_concurrency, rate, seconds)

    def _require_known_queue(self, name: str) -> None:
        """Raise UnknownQueueError unless ``name`` is a queue this code or this
        database knows: a job registered for this database uses it,
        ``WORKHORSE['QUEUES']`` names it, it has a policy row (it was paused
        or limited before), or the database holds a job of it. A queue can be
        known before any job was enqueued on it; a typo is not known at all."""
        from ..core.registry import known_queues
        from ..exceptions import UnknownQueueError
        from ..models import JobQuery, Queue

        known = known_queues(self.using, get_settings().queues)
        if name in known:
            return
        if Queue.objects.using(self.using).filter(name=name).exists():
            return
        if JobQuery.objects.using(self.using).filter(queue=name).exists():
            return
        raise UnknownQueueError(
            f"unknown queue {name!r}: no job registered for database {self.using!r} uses it, "
            f"WORKHORSE['QUEUES'] does not name it, it has no policy yet and no job of it is "
            f"stored (known: {', '.join(known) or 'none'}); check the name, or declare the "
            f"queue in WORKHORSE['QUEUES']"
        )

    def get_job_timeline(
        self, job_id: int, cursor: str | None = None, limit: int = 100
    ) -> Page[TimelineEntry]:
        """Up to ``limit`` entries of the job's history in time order (events and
        closed attempts merged, across day partitions), and the cursor of the
        next page. An unknown job has an empty timeline."""
        job_id = _check_job_id(job_id)
        limit = _check_limit(limit)
        after = None
        if cursor is not None:
            key = _load_cursor(cursor, "workhorse.timeline")
            try:
                cursor_job, at, rank, row_id = key
                after = (datetime.fromisoformat(at), int(rank), int(row_id))
            except (TypeError, ValueError) as exc:
                raise InvalidCursorError(_BAD_CURSOR.format(cursor=shown(cursor, 40))) from exc
            # Ranks and ids as workhorse_job_timeline_v1 makes them: a derived
            # row has rank -1, 2 or 3 and may have id 0.
            if cursor_job != job_id or after[1] not in (-1, 0, 1, 2, 3) or not _is_id(after[2]):
                raise InvalidCursorError(_BAD_CURSOR.format(cursor=shown(cursor, 40)))
        with connections[self.using].cursor() as db:
            rows = store.job_timeline(db, job_id, after, limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        next_cursor = None
        if more:
            last = rows[-1]
            next_cursor = signing.dumps(
                [job_id, last["at"].isoformat(), last["rank"], last["id"]],
                salt="workhorse.timeline",
            )
        entries = [
            TimelineEntry(
                at=r["at"],
                source=r["source"],
                kind=r["kind"],
                attempt=r["attempt"],
                worker_id=r["worker_id"],
                started_at=r["started_at"],
                finished_at=r["finished_at"],
                error=r["error"],
                data=r["data"],
            )
            for r in rows
        ]
        return Page(entries, next_cursor)

    def list_jobs(
        self,
        *,
        queue: str | None = None,
        name: str | None = None,
        state: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        idempotency_key: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
        error_type: str | None = None,
        name_prefix: str | None = None,
        payload: dict[str, Any] | None = None,
    ) -> Page[JobRow]:
        """A page of jobs, newest first, keyset-paged through ``job_query``.

        ``next_cursor`` leads to older jobs, ``previous_cursor`` to newer ones.
        ``error_type`` (with ``state`` failed or canceled) keeps the jobs whose
        error has that type; ``name_prefix`` the jobs whose name starts with
        it; ``payload`` the jobs whose payload contains that object (for
        example ``{"customer": 42}``): every job when the operator made the
        payload index, live jobs only without it (docs/admin.md, "Search").
        Every filter is validated first: a bad value raises InvalidQueryError
        (InvalidCursorError for a cursor) naming it.
        """
        if error_type is not None:
            if state not in ("failed", "canceled"):
                raise InvalidQueryError(
                    "error_type filters failed or canceled jobs: give state='failed' or "
                    f"state='canceled' with it (state is {shown(state)})"
                )
            if (
                not isinstance(error_type, str)
                or not 1 <= len(error_type) <= 200
                or text_problem(error_type, "")
            ):
                raise InvalidQueryError(
                    f"error_type is 1 to 200 characters of text, got {shown(error_type)}"
                )
        if name_prefix is not None and (
            not isinstance(name_prefix, str)
            or not 1 <= len(name_prefix) <= 200
            or text_problem(name_prefix, "")
        ):
            raise InvalidQueryError(
                f"name_prefix is 1 to 200 characters of text, got {shown(name_prefix)}"
            )
        payload_json = None
        if payload is not None:
            if not isinstance(payload, dict) or not payload:
                raise InvalidQueryError(
                    'payload is a non-empty dict of keys and values, e.g. {"customer": 42}; '
                    f"got {shown(payload)}"
                )
            problem = search_problem(payload)
            if problem:
                raise InvalidQueryError(
                    f"payload search: {problem}; no stored payload can hold that: "
                    "leave it out of the search"
                )
            try:
                payload_json = json.dumps(payload, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise InvalidQueryError(f"payload must be JSON: {exc}") from None
            if text_problem(payload_json, "") or len(payload_json) > 10_000:
                raise InvalidQueryError(
                    f"payload is at most 10,000 characters of JSON text, got {shown(payload)}"
                )
        created_after, created_before = _check_filters(
            queue, name, state, created_after, created_before
        )
        if idempotency_key is not None and (
            not isinstance(idempotency_key, str)
            or not 1 <= len(idempotency_key) <= 255
            or text_problem(idempotency_key, "")
        ):
            raise InvalidQueryError(
                "an idempotency key is 1 to 255 characters without NUL or lone surrogates, "
                f"got {shown(idempotency_key)}"
            )
        limit = _check_limit(limit)
        filters: dict[str, object] = {
            "queue": queue,
            "name": name,
            "state": state,
            "created_after": created_after,
            "created_before": created_before,
            "idempotency_key": idempotency_key,
            "error_type": error_type,
            "name_prefix": name_prefix,
            "payload": payload,
        }
        direction, from_id = "older", None
        if cursor is not None:
            key = _load_cursor(cursor, "workhorse.jobs")
            if (
                not isinstance(key, list)
                or len(key) != 3
                or key[0] not in ("older", "newer")
                or not _is_id(key[1])
                or key[2] != _filters_key(filters)
            ):
                raise InvalidCursorError(_BAD_CURSOR.format(cursor=shown(cursor, 40)))
            direction, from_id = key[0], key[1]
        with connections[self.using].cursor() as db:
            rows = store.list_jobs(
                db,
                queue=queue,
                name=name,
                state=state,
                created_after=created_after,
                created_before=created_before,
                before_id=from_id if direction == "older" else None,
                after_id=from_id if direction == "newer" else None,
                limit=limit + 1,
                idempotency_key=idempotency_key,
                error_type=error_type,
                name_prefix=name_prefix,
                payload_json=payload_json,
            )
        more = len(rows) > limit
        if direction == "older":
            rows = rows[:limit]
            has_older, has_newer = more, from_id is not None
        else:
            rows = rows[-limit:] if more else rows
            has_older, has_newer = True, more
        items = [JobRow(id=r.pop("job_id"), **r) for r in rows]
        older = newer = None
        if items and has_older:
            older = list_cursor("older", items[-1].id, **filters)
        if items and has_newer:
            newer = list_cursor("newer", items[0].id, **filters)
        return Page(items, older, newer)

    def queue_stats(
        self,
        window_seconds: float | timedelta = 3600.0,
        buckets: int = 12,
        count_limit: int | None = None,
    ) -> list[QueueStats]:
        """Every queue with live jobs, jobs finished within the window, or a policy
        row: counts by state, oldest ready age, paused flag, limits, throughput
        buckets.

        Live counts are exact by default, at a cost that grows with the number
        of live jobs. With ``count_limit`` each live state is counted up to that
        many per queue and the states that reached it are in ``capped``: the
        call then reads a bounded number of index entries however deep the
        queues are (the admin's queues page uses 1,000)."""
        window = _check_window("window_seconds", window_seconds)
        if (
            not isinstance(buckets, int)
            or isinstance(buckets, bool)
            or not 1 <= buckets <= MAX_BUCKETS
        ):
            raise InvalidQueryError(
                f"buckets must be a whole number from 1 to {MAX_BUCKETS}, got {shown(buckets, 40)}"
            )
        if count_limit is not None and (
            not isinstance(count_limit, int)
            or isinstance(count_limit, bool)
            or not 1 <= count_limit <= INT4_MAX
        ):
            raise InvalidQueryError(
                f"count_limit must be a whole number from 1 to {INT4_MAX}, or None to count"
                f" exactly; got {shown(count_limit, 40)}"
            )
        with connections[self.using].cursor() as db:
            rows = store.queue_stats(db, window, buckets, count_limit)
        return [
            QueueStats(
                name=r["queue"],
                paused=r["paused"],
                counts={s: r[s] for s in STATES},
                oldest_ready_at=r["oldest_ready_at"],
                oldest_ready_age=r["oldest_ready_seconds"],
                finished_per_bucket=list(r["finished_per_bucket"]),
                window_seconds=r["window_seconds"],
                capped=frozenset(r["capped"]),
                concurrency_limit=r["concurrency_limit"],
                rate_limit=r["rate_limit"],
                rate_period=r["rate_period_seconds"],
            )
            for r in rows
        ]

    def queue_names(self) -> list[str]:
        """Every queue that has a job (live or kept) or a policy row, in name order."""
        with connections[self.using].cursor() as db:
            return store.queue_names(db)

    def workers(self) -> dict[str, Any]:
        """Workers seen now: how many live ones describe themselves in their
        heartbeats (``live_workers``, the silent ones left out), who holds
        leases, and the connections each worker holds
        (``store.worker_connections``)."""
        connected = sum(1 for w in self.live_workers() if not w.silent)
        with connections[self.using].cursor() as db:
            return {
                "connected": connected,
                "holding_jobs": store.workers_holding_jobs(db),
                "connections": store.worker_connections(db),
            }

    def live_workers(self, seen_within_seconds: float = 3600.0) -> list[WorkerInfo]:
        """Workers whose heartbeat was seen within ``seen_within_seconds``
        (default an hour), most recently seen first: id, host, pid, queues and
        slots, slots busy, version, when first and last seen, whether it has
        gone silent, the jobs it holds, and the route of its successes."""
        within = _check_window("seen_within_seconds", seen_within_seconds)
        with connections[self.using].cursor() as db:
            rows = store.list_workers(db, within)
            held: dict[str, int] = {}
            for holder in store.workers_holding_jobs(db):
                # A claim session may own jobs under "<worker id>+N" (claims.py).
                worker = str(holder["worker_id"]).split("+", 1)[0]
                held[worker] = held.get(worker, 0) + int(holder["jobs"])
        found = []
        for r in rows:
            info = r["info"]  # decoded by the store; {} when it could not be
            interval = info.get("renew_interval")
            interval = (
                float(interval)
                if _is_number(interval) and 0 < interval <= _MAX_RENEW_INTERVAL
                else 15.0
            )
            queues = info.get("queues")
            pid = info.get("pid")
            problems = [r["info_unreadable"]] if r["info_unreadable"] else []
            slots, busy = (_slot_count(info, key, problems) for key in ("slots", "busy"))
            if problems:
                problems[-1] += (
                    "; a running worker writes its row again at its next heartbeat (delete "
                    "the row of one that is gone)"
                )
            if r["unreadable"]:
                problems.append(r["unreadable"])
            seen = r["seen_seconds_ago"]
            found.append(
                WorkerInfo(
                    worker_id=r["worker_id"],
                    host=str(info.get("host", "")),
                    pid=pid if _is_number(pid) and isinstance(pid, int) else None,
                    queues=dict(queues) if isinstance(queues, dict) else {},
                    slots=slots,
                    busy=busy,
                    version=str(info.get("version", "")),
                    first_seen_at=r["first_seen_at"],
                    last_seen_at=r["last_seen_at"],
                    seen_seconds_ago=seen,
                    silent=seen is None or seen > 3 * interval + 5,
                    jobs_held=held.get(r["worker_id"], 0),
                    success_route=str(info.get("success_route") or ""),
                    unreadable="; ".join(problems) or None,
                )
            )
        return found

    # -- actions ------------------------------------------------------------

    def _act(self, call: Callable[..., tuple[Any, ...]], *args: Any) -> tuple[Any, ...]:
        """The row of one SQL action (status, state, ...), in a transaction of its own."""
        with transaction.atomic(using=self.using), connections[self.using].cursor() as db:
            return call(db, *args)

    def retry(
        self, job_id: int, reason: str | None = None, *, ignore_dependencies: bool = False
    ) -> ActionResult:
        """Run a failed or canceled job again with a fresh attempt budget; its
        history stays and a 'retried' event is recorded.

        A job with prerequisites is judged again by its dependency policy
        against them as they are now: it waits (state 'blocked') for those
        still live, runs ('ready') when the policy is met already, and is
        refused (status 'unchanged', the message naming the prerequisite)
        when the policy can no longer be met, for instance all_succeeded with
        a failed prerequisite: retry that one first. ``ignore_dependencies``
        runs it now whatever its prerequisites are doing."""
        job_id = _check_job_id(job_id)
        if not isinstance(ignore_dependencies, bool):
            raise InvalidQueryError(
                f"ignore_dependencies must be True or False, got {shown(ignore_dependencies, 40)}"
            )
        status, state, prerequisite, prerequisite_state = self._act(
            store.retry_job, job_id, _check_reason(reason), ignore_dependencies
        )
        if status == "changed" and state == "blocked":
            message = (
                f"job #{job_id} will run again with a fresh attempt budget once its "
                "prerequisites still running end as its dependency policy needs (blocked)"
            )
        elif status == "changed":
            message = f"job #{job_id} is ready to run again with a fresh attempt budget"
        elif status == "unchanged" and prerequisite is not None:
            message = (
                f"job #{job_id} stays {state}: its dependency policy can no longer be met, "
                f"as its prerequisite job #{prerequisite} ended {prerequisite_state}; retry job "
                f"#{prerequisite} first (the dependent then waits for it), or retry it "
                "ignoring its dependencies to run it regardless (ignore_dependencies=True; "
                "in the admin, the job page's 'Retry ignoring prerequisites' button)"
            )
        elif status == "unchanged":
            message = f"job #{job_id} is {state}: only failed or canceled jobs can be retried"
        else:
            message = f"there is no job #{job_id}"
        return ActionResult("retry", job_id, status, state, message)

    def promote(self, job_id: int) -> ActionResult:
        """Make a scheduled job ready now."""
        job_id = _check_job_id(job_id)
        status, state = self._act(store.promote_job, job_id)
        messages = {
            "changed": f"job #{job_id} is ready to run now",
            "unchanged": f"job #{job_id} is {state}: only scheduled jobs can be promoted",
            "unknown": f"there is no job #{job_id}",
        }
        return ActionResult("promote", job_id, status, state, messages[status])

    def cancel(
        self, job_id: int, reason: str | None = None, *, by: str | None = None
    ) -> ActionResult:
        """Cancel a job; ``by`` names who asked (the Django admin passes the
        user's username), ``reason`` says why.

        A blocked, scheduled or ready job ends 'canceled' at once (status
        'changed'). A running job is flagged and its worker told (status
        'requested', state 'active'): the worker stops the handler and acks
        the job 'canceled', within moments through a notification or within
        one heartbeat interval without one. A handler that finishes before
        its worker hears of the cancel keeps its result. A job already
        finished is left as it is (status 'unchanged', state saying how it
        ended).

        The envelope of a job canceled at once holds ``reason``, ``by`` and
        ``at`` (the database's time of the cancel); for a running job they
        are kept in its ``cancel_requested`` event.
        """
        job_id = _check_job_id(job_id)
        status, state = self._act(store.cancel_job, job_id, _check_reason(reason), _check_by(by))
        messages = {
            "changed": f"job #{job_id} is canceled",
            "requested": (
                f"job #{job_id} is running: its worker was asked to stop it, and it ends "
                "canceled once the worker acks (a handler that finishes first keeps its result)"
            ),
            "unchanged": f"job #{job_id} had already finished ({state}): nothing to cancel",
            "unknown": f"there is no job #{job_id}",
        }
        return ActionResult("cancel", job_id, status, state, messages[status])

    def pause_queue(self, name: str) -> ActionResult:
        """Stop workers claiming from ``name``; running jobs finish.

        Raises UnknownQueueError for a queue neither this code nor this
        database knows (the rule of ``set_queue_limits``), so that a typo is
        refused rather than answered "paused"."""
        return self._set_paused(name, True)

    def resume_queue(self, name: str) -> ActionResult:
        """Let workers claim from ``name`` again, waking idle ones at once;
        UnknownQueueError as ``pause_queue``."""
        return self._set_paused(name, False)

    def _set_paused(self, name: str, paused: bool) -> ActionResult:
        name = check_queue_name(name)
        self._require_known_queue(name)
        status, now_paused = self._act(store.set_queue_paused, name, paused)
        word = "paused" if now_paused else "running"
        message = (
            f"queue {name!r} is {word}"
            if status == "changed"
            else f"queue {name!r} was already {word}"
        )
        return ActionResult("pause" if paused else "resume", name, status, word, message)

    def failures(self, window_seconds: float | timedelta = 86400.0) -> list[FailureGroup]:
        """Jobs that ended failed within the window (default the last 24
        hours, to the hour), grouped by job name and error type, most failures
        first. Read from the failure counters the finishing statement keeps
        (docs/admin.md, "Queue statistics"): the same few rows whatever the
        number of failures."""
        window = _check_window("window_seconds", window_seconds)
        with connections[self.using].cursor() as db:
            return [FailureGroup(**r) for r in store.failures(db, window)]

    def payload_search_covers_every_job(self) -> bool:
        """Whether payload search reads every job (the operator made the payload
        index) or live jobs only (docs/admin.md, "Search")."""
        with connections[self.using].cursor() as db:
            return store.payload_index_exists(db)

    def count_jobs(
        self,
        *,
        queue: str | None = None,
        name: str | None = None,
        state: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        cap: int = COUNT_CAP,
    ) -> int:
        """How many jobs match ``list_jobs``' filters, counted up to ``cap``
        (a result equal to ``cap`` means "at least that many"): the cost is
        bounded by ``cap`` index entries, never a count of all history."""
        created_after, created_before = _check_filters(
            queue, name, state, created_after, created_before
        )
        if not isinstance(cap, int) or isinstance(cap, bool) or not 1 <= cap <= INT4_MAX:
            raise InvalidQueryError(
                f"cap must be a whole number from 1 to {INT4_MAX}; got {shown(cap)}"
            )
        with connections[self.using].cursor() as db:
            return store.count_jobs(
                db,
                queue=queue,
                name=name,
                state=state,
                created_after=created_after,
                created_before=created_before,
                cap=cap,
            )

    def bulk_matching(
        self,
        action: str,
        *,
        queue: str | None = None,
        name: str | None = None,
        state: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        reason: str | None = None,
        by: str | None = None,
        batch_size: int = BULK_BATCH_SIZE,
        limit: int | None = None,
    ) -> BulkOutcome:
        """``retry`` or ``cancel`` every job matching ``list_jobs``' filters,
        newest first, ``batch_size`` jobs per transaction (so 100,000 jobs
        never hold one transaction, and a stop loses no finished batch).
        Each batch is the next page of the list as it stands when the batch
        starts; a job whose state no longer allows the action is counted
        ``unchanged``. ``limit`` stops after that many jobs."""
        _check_bulk_action(action)
        if (
            not isinstance(batch_size, int)
            or isinstance(batch_size, bool)
            or not 1 <= batch_size <= 1000
        ):
            raise InvalidQueryError(f"batch_size must be from 1 to 1000; got {shown(batch_size)}")
        if limit is not None and (
            not isinstance(limit, int) or isinstance(limit, bool) or limit < 1
        ):
            raise InvalidQueryError(
                f"limit must be a positive whole number or None; got {shown(limit)}"
            )
        reason, by = _check_reason(reason), _check_by(by)
        counts = {"changed": 0, "requested": 0, "unchanged": 0, "unknown": 0}
        batches, done, cursor = 0, 0, None

        def outcome(complete: bool) -> BulkOutcome:
            unchanged = counts["unchanged"] + counts["unknown"]
            return BulkOutcome(
                action, counts["changed"], counts["requested"], unchanged, batches, complete
            )

        while True:
            size = batch_size if limit is None else min(batch_size, limit - done)
            page = self.list_jobs(
                queue=queue,
                name=name,
                state=state,
                created_after=created_after,
                created_before=created_before,
                cursor=cursor,
                limit=size,
            )
            if not page.items:
                return outcome(complete=True)
            with transaction.atomic(using=self.using), connections[self.using].cursor() as db:
                for row in page.items:
                    if action == "retry":
                        status = store.retry_job(db, row.id, reason, False)[0]
                    else:
                        status = store.cancel_job(db, row.id, reason, by)[0]
                    counts[status] = counts.get(status, 0) + 1
            batches += 1
            done += len(page.items)
            cursor = page.next_cursor
            if cursor is None or (limit is not None and done >= limit):
                return outcome(complete=cursor is None)

    def start_bulk(
        self,
        action: str,
        *,
        queue: str | None = None,
        name: str | None = None,
        state: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        reason: str | None = None,
        by: str | None = None,
        permission: str | None = None,
        batch_size: int = BULK_BATCH_SIZE,
    ) -> BulkAction:
        """Ask for ``retry`` or ``cancel`` of every job matching ``list_jobs``'
        filters, as a job: returns at once with the action's record (status
        ``queued``); a worker serving ``workhorse.operator`` walks the jobs,
        ``batch_size`` per transaction, and the record shows its progress
        (``bulk_action(id)``).

        Only the states the action can change are walked (failed and
        canceled for a retry; blocked, scheduled, ready and active for a
        cancel), and no job newer than the newest one now. ``by`` (who asks)
        and ``permission`` (how their right to act was checked; the Django
        admin passes the permission it checked) are recorded with it.
        While the same action on the same filter is queued or running, asking
        again returns that one (``inserted`` False) and starts nothing."""
        _check_bulk_action(action)
        created_after, created_before = _check_filters(
            queue, name, state, created_after, created_before
        )
        if queue == OPERATOR_QUEUE:
            raise InvalidQueryError(
                f"the queue {OPERATOR_QUEUE} holds the jobs that run operator actions: an "
                "action on every matching job does not act on them; cancel one by its id"
            )
        applies = ACTION_STATES[action]
        if state is not None and state not in applies:
            raise InvalidQueryError(
                f"a {action} changes {' and '.join(applies)} jobs only, and the filter asks "
                f"for {state} ones: there is nothing to {action}"
            )
        if (
            not isinstance(batch_size, int)
            or isinstance(batch_size, bool)
            or not 1 <= batch_size <= 1000
        ):
            raise InvalidQueryError(f"batch_size must be from 1 to 1000; got {shown(batch_size)}")
        reason, by, permission = _check_reason(reason), _check_by(by), _check_by(permission)
        kept = get_retention().finished_jobs
        finished_before = None if kept is None else datetime.now(UTC) - timedelta(seconds=kept)
        definition = registry.get(bulk_actions.BULK_ACTION_JOB)
        with transaction.atomic(using=self.using), transaction.atomic(using=definition.using):
            with connections[self.using].cursor() as db:
                action_id, inserted = store.bulk_request(
                    db,
                    action=action,
                    states=[state] if state is not None else list(applies),
                    queue=queue,
                    name=name,
                    state=state,
                    created_after=created_after,
                    created_before=created_before,
                    reason=reason,
                    by=by,
                    permission=permission,
                    batch_size=batch_size,
                    finished_before=finished_before,
                )
            # The job's idempotency key is the action's: asking for a
            # running action again enqueues nothing new.
            definition.options(
                idempotency_key=f"{bulk_actions.BULK_ACTION_JOB}:{self.using}:{action_id}"
            ).enqueue(action_id=action_id, store=self.using)
        found = self.bulk_action(action_id)
        assert found is not None, "the action was just written"
        return dataclasses.replace(found, inserted=inserted)

    def bulk_action(self, action_id: int) -> BulkAction | None:
        """The record of a filter-wide action as it stands, or None."""
        action_id = _check_job_id(action_id)
        with connections[self.using].cursor() as db:
            rows = store.bulk_actions(db, action_id=action_id)
        return bulk_actions.from_row(rows[0], self.using) if rows else None

    def bulk_actions(self, *, running_only: bool = False, limit: int = 50) -> list[BulkAction]:
        """Filter-wide actions, newest first: those queued or running, and
        those that ended within the retention window of finished jobs
        (``WORKHORSE['RETENTION']['FINISHED_JOBS']``); ``running_only`` for the first."""
        limit = _check_limit(limit)
        kept = get_retention().finished_jobs
        after = None if kept is None else datetime.now(UTC) - timedelta(seconds=kept)
        with connections[self.using].cursor() as db:
            rows = store.bulk_actions(db, live_only=running_only, finished_after=after, limit=limit)
        return [bulk_actions.from_row(row, self.using) for row in rows]

    def cancel_bulk_action(self, action_id: int, *, by: str | None = None) -> ActionResult:
        """Stop a filter-wide action: a queued one at once, a running one after
        the batch it is in (the call waits for that batch to commit). The
        jobs it acted on stay as they are."""
        action_id = _check_job_id(action_id)
        status, state = bulk_actions.stop(self.using, action_id, _check_by(by))
        messages = {
            "changed": f"action #{action_id} is canceled; it had not started",
            "requested": (
                f"action #{action_id} stops after the batch it is in; the jobs it acted on "
                "stay as they are"
            ),
            "unchanged": f"action #{action_id} had already ended ({state})",
            "unknown": f"there is no action #{action_id}",
        }
        return ActionResult(
            "cancel_action", action_id, cast(ActionStatus, status), state, messages[status]
        )

    def bulk(
        self,
        action: str,
        job_ids: Sequence[int],
        *,
        by: str | None = None,
        reason: str | None = None,
    ) -> list[ActionResult]:
        """``retry`` or ``cancel`` each job; one result per job, in order.
        ``by`` and ``reason`` are passed to each cancel. Every argument is
        checked before the first job is touched: a bad id among good ones
        changes nothing."""
        _check_bulk_action(action)
        ids = _check_job_ids(job_ids)
        by, reason = _check_by(by), _check_reason(reason)
        if action == "retry":
            return [self.retry(job_id) for job_id in ids]
        return [self.cancel(job_id, reason, by=by) for job_id in ids]


def _check_bulk_action(action: object) -> None:
    if action not in ("retry", "cancel"):
        raise InvalidQueryError(f"bulk action must be 'retry' or 'cancel', got {shown(action, 40)}")


def _check_by(by: object) -> str | None:
    if by is None:
        return None
    if not isinstance(by, str) or not 1 <= len(by) <= 255 or text_problem(by, ""):
        raise InvalidQueryError(
            "by is a string of 1 to 255 characters without NUL or lone surrogates, or None; "
            f"got {shown(by)}"
        )
    return by


def _check_reason(reason: object) -> str | None:
    if reason is None:
        return None
    if not isinstance(reason, str) or len(reason) > 1000 or text_problem(reason, ""):
        raise InvalidQueryError(
            "a reason is a string of at most 1,000 characters without NUL or lone surrogates, "
            f"or None; got {shown(reason)}"
        )
    return reason
