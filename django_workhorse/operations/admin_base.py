"""What every family of ``Admin``'s calls shares: the alias it works on, the
checks of its arguments (each error names what was wrong and what to
give), and the signed cursors of the job list.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from django.core import signing
from django.db import connections, transaction

from ..core.conf import get_settings
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
from ..db.snapshots import Checkpoint as Checkpoint  # (the names' old home)
from ..db.snapshots import JobDependency as JobDependency
from ..exceptions import InvalidCursorError, InvalidQueryError
from .admin_results import MAX_JOB_ID, MAX_PAGE, STATES


def check_job_id(job_id: object) -> int:
    if isinstance(job_id, bool) or not isinstance(job_id, int) or not 1 <= job_id <= MAX_JOB_ID:
        raise InvalidQueryError(
            f"a job id is a whole number from 1 to {MAX_JOB_ID}, got {shown(job_id, 40)}"
        )
    return job_id


def check_job_ids(job_ids: object) -> list[int]:
    """Every id of a list of job ids, checked before any of them is read or
    acted on, so that one bad id leaves every job as it was."""
    if isinstance(job_ids, str | bytes | Mapping) or not isinstance(job_ids, Iterable):
        raise InvalidQueryError(
            "job ids are a list of whole numbers, got "
            f"{type(job_ids).__name__} {shown(job_ids, 40)}"
        )
    return [check_job_id(job_id) for job_id in job_ids]


def check_queue_name(queue: object) -> str:
    """``queue`` if it is a valid queue name, else InvalidQueryError naming the rule."""
    if not isinstance(queue, str) or not QUEUE_NAME_RE.fullmatch(queue):
        raise InvalidQueryError(
            f"{shown(queue)} is not a queue name: use 1 to 53 letters, digits, '_', '.' and '-', "
            "not starting with '.' or '-'"
        )
    return queue


def check_job_name(name: object) -> str:
    if not isinstance(name, str) or not JOB_NAME_RE.fullmatch(name):
        raise InvalidQueryError(
            f"{shown(name)} is not a job name: use 1 to 200 letters, digits, '_', '.', ':' "
            "and '-', "
            "starting with a letter or '_'"
        )
    return name


def check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidQueryError(
            f"limit must be a whole number from 1 to {MAX_PAGE}, got {shown(limit, 40)}"
        )
    return limit


def check_time(key: str, value: object) -> datetime | None:
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


BAD_CURSOR = (
    "the cursor {cursor} was not issued by this server for this list (changed, cut "
    "short, or from another list): start again from the first page"
)


BIGINT_MAX = 2**63 - 1


def check_filters(
    queue: object, name: object, state: object, created_after: object, created_before: object
) -> tuple[datetime | None, datetime | None]:
    """The job list's filters checked (InvalidQueryError naming a bad one);
    the two times as the query takes them."""
    if queue is not None:
        check_queue_name(queue)
    if name is not None:
        check_job_name(name)
    if state is not None and state not in STATES:
        raise InvalidQueryError(f"state must be one of {', '.join(STATES)}; got {shown(state)}")
    return check_time("created_after", created_after), check_time("created_before", created_before)


def check_window(key: str, value: object) -> float:
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


def is_id(value: object) -> bool:
    """A row id as a cursor may carry it: an int in bigint's positive range."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= BIGINT_MAX


def list_cursor(direction: str, job_id: int, **filters: object) -> str:
    """The signed cursor of a job-list page: ``direction`` ("older" or
    "newer") from ``job_id``, bound to the list's filters (the keyword
    arguments of ``Admin.list_jobs``) so that a list with other filters
    refuses it."""
    signed: str = signing.dumps([direction, job_id, filters_key(filters)], salt="workhorse.jobs")
    return signed


def filters_key(filters: dict[str, object]) -> str:
    named = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in filters.items()}
    text = json.dumps({k: v for k, v in sorted(named.items()) if v is not None})
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_cursor(cursor: str, salt: str) -> Any:
    if not isinstance(cursor, str) or len(cursor) > 500:
        raise InvalidCursorError(BAD_CURSOR.format(cursor=shown(cursor, 40)))
    try:
        return signing.loads(cursor, salt=salt)
    except (signing.BadSignature, ValueError, TypeError) as exc:
        raise InvalidCursorError(BAD_CURSOR.format(cursor=shown(cursor, 40))) from exc


def check_bulk_action(action: object) -> None:
    if action not in ("retry", "cancel"):
        raise InvalidQueryError(f"bulk action must be 'retry' or 'cancel', got {shown(action, 40)}")


def check_by(by: object) -> str | None:
    if by is None:
        return None
    if not isinstance(by, str) or not 1 <= len(by) <= 255 or text_problem(by, ""):
        raise InvalidQueryError(
            "by is a string of 1 to 255 characters without NUL or lone surrogates, or None; "
            f"got {shown(by)}"
        )
    return by


def check_reason(reason: object) -> str | None:
    if reason is None:
        return None
    if not isinstance(reason, str) or len(reason) > 1000 or text_problem(reason, ""):
        raise InvalidQueryError(
            "a reason is a string of at most 1,000 characters without NUL or lone surrogates, "
            f"or None; got {shown(reason)}"
        )
    return reason


class AdminBase:
    """The database alias an ``Admin`` works on, checked once, and the
    transaction each single action runs in."""

    def __init__(self, using: str | None = None) -> None:
        self.using = using or get_settings().database
        if not isinstance(self.using, str) or self.using not in connections.databases:
            raise InvalidQueryError(
                f"using must be an alias of settings.DATABASES "
                f"({', '.join(connections.databases)}), got {shown(self.using)}"
            )

    def _act(self, call: Callable[..., tuple[Any, ...]], *args: Any) -> tuple[Any, ...]:
        """The row of one SQL action (status, state, ...), in a transaction of its own."""
        with transaction.atomic(using=self.using), connections[self.using].cursor() as db:
            return call(db, *args)
