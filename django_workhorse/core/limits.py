"""The rules a job's options and payload must meet, defined once.

Each rule here is the one the database enforces (the CHECK constraints of
``sql/tables_v1.sql`` and the range checks of ``workhorse_enqueue_many_v1``):
``tests/integration/test_limits_match_database.py`` probes the database at
every boundary named here, so the Python side and the SQL side cannot drift
apart. Python applies them before any SQL is sent, so a refused value never
reaches PostgreSQL and never aborts the caller's transaction.

Every ``*_problem`` function returns None for a valid value, or a sentence
naming the value, the rule and the fix.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any

QUEUE_NAME_PATTERN = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
QUEUE_NAME_MAX = 53
"""Queue names become NOTIFY channels ``workhorse:<queue>`` (63 bytes at most)."""

JOB_NAME_PATTERN = r"[A-Za-z_][A-Za-z0-9_.:-]*"
JOB_NAME_MAX = 200

QUEUE_NAME_RE = re.compile(rf"{QUEUE_NAME_PATTERN[:-1]}{{0,{QUEUE_NAME_MAX - 1}}}")
"""Use with ``fullmatch``: ``match`` with ``$`` would accept a trailing newline."""
JOB_NAME_RE = re.compile(rf"{JOB_NAME_PATTERN[:-1]}{{0,{JOB_NAME_MAX - 1}}}")

CHECKPOINT_NAME_PATTERN = r"[A-Za-z0-9_][A-Za-z0-9_.:-]*"
CHECKPOINT_NAME_MAX = 100
CHECKPOINT_NAME_RE = re.compile(rf"{CHECKPOINT_NAME_PATTERN[:-1]}{{0,{CHECKPOINT_NAME_MAX - 1}}}")
"""The name of a checkpoint or a sleep (``workhorse_job_checkpoint.name``)."""

PRIORITY_MIN, PRIORITY_MAX = -100, 100
MAX_ATTEMPTS_MIN, MAX_ATTEMPTS_MAX = 1, 1000
MAX_STALLED_MIN, MAX_STALLED_MAX = 0, 1000
IDEMPOTENCY_KEY_MAX = 255
CONCURRENCY_MAX = 10_000
"""Slots per queue of one worker process (``--concurrency``, ``CONCURRENCY``)."""
PROCESSES_MAX = 1000
"""Worker processes of one ``runworker --processes``."""

MIN_INTERVAL_SECONDS = 0.000001
"""1 microsecond: PostgreSQL keeps an ``interval`` to the microsecond, so a
shorter duration (a rate period, a stats window) would be stored as 0."""

WORKER_ID_PREFIX_MAX = 200
"""The longest prefix of worker ids (``WORKER_ID``, ``runworker --id``): a
worker id travels in the cancel notification of each of its running jobs,
whose payload PostgreSQL limits to 8,000 bytes."""

CADENCE_MIN_SECONDS = 0.01
"""The shortest lease and the shortest period of a worker's loops (heartbeat,
stall sweep, poll, schedule sweep, depth sampling, vacuum, retention):
shorter, a worker would query the database without pause. Its default
heartbeat is half the lease, so the lease's floor is twice this."""

MAX_DURATION_SECONDS = 3_155_760_000
"""100 years: the longest ``delay`` and ``timeout``. The database refuses
longer ones too; far beyond this PostgreSQL's ``interval`` overflows, and a
run_at after year 9999 could not be read back by Python."""

TIMEOUT_MIN_SECONDS = 0.000001
"""One microsecond, the resolution of ``interval``: a shorter timeout would be stored as 0."""

RUN_AT_MIN = datetime(1, 1, 1, tzinfo=UTC)
RUN_AT_END = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
"""``run_at`` must lie in the years 1 to 9999 in UTC, the range Python can read back."""

PAYLOAD_MAX_BYTES = 16 * 1024 * 1024
"""The largest payload, as UTF-8 JSON text (jsonb itself stops near 256 MiB)."""
PAYLOAD_MAX_INT_DIGITS = 4300
"""Integer digits: Python's default ``sys.get_int_max_str_digits()``, so every
worker can read a payload back whatever its interpreter's setting."""
PAYLOAD_MAX_DEPTH = 100
"""Nesting of lists and objects inside the payload object: well inside what
Python's JSON decoder and PostgreSQL's parser handle without deep recursion."""


def text_problem(value: str, what: str) -> str | None:
    """Why PostgreSQL's ``text``/``jsonb`` cannot store this string, or None."""
    if "\x00" in value:
        return f"{what} contains a NUL character (\\u0000), which PostgreSQL cannot store"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return f"{what} contains a lone surrogate, which is not valid UTF-8; fix the text"
    return None


def shown(value: Any, width: int = 60) -> str:
    """A repr for messages of at most ``width`` characters, whatever the value:
    an int too long for ``repr`` (more than 4,300 digits), or one whose
    ``__repr__`` raises, too."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= width else text[: width - 3] + "..."


def queue_name_problem(name: object) -> str | None:
    if not isinstance(name, str):
        return f"a queue name must be a string, got {type(name).__name__} {shown(name)}"
    if len(name) > QUEUE_NAME_MAX:
        return (
            f"queue name {name[:20]!r}... is {len(name)} characters; queues become PostgreSQL "
            "NOTIFY channels ('workhorse:<queue>', at most 63 bytes), so use at most "
            f"{QUEUE_NAME_MAX}"
        )
    if QUEUE_NAME_RE.fullmatch(name):
        return None
    return (
        f"queue name {shown(name)} is not valid: use 1 to {QUEUE_NAME_MAX} characters of "
        "letters, digits, '_', '.' and '-', not starting with '.' or '-'"
    )


def job_name_problem(name: object) -> str | None:
    if isinstance(name, str) and JOB_NAME_RE.fullmatch(name):
        return None
    return (
        f"job name {shown(name)} is not valid: use 1 to {JOB_NAME_MAX} letters, digits, "
        "'_', '.', ':' and '-', starting with a letter or '_'"
    )


def checkpoint_name_problem(name: object, what: str = "checkpoint") -> str | None:
    if isinstance(name, str) and CHECKPOINT_NAME_RE.fullmatch(name):
        return None
    return (
        f"{what} name {shown(name)} is not valid: use 1 to {CHECKPOINT_NAME_MAX} letters, "
        "digits, '_', '.', ':' and '-', starting with a letter, a digit or '_'"
    )


def whole_problem(field: str, value: Any, low: int, high: int) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return (
            f"{field} must be a whole number from {low} to {high}, got "
            f"{type(value).__name__} {shown(value)}"
        )
    if not low <= value <= high:
        return f"{field} must be from {low} to {high}, got {shown(value)}"
    return None


def seconds_of(value: Any) -> float:
    """Seconds from an int, float or timedelta; ValueError naming what was wrong
    (a bool, another type, NaN or an infinity)."""
    if isinstance(value, bool):
        raise ValueError(f"expected seconds or a timedelta, got the bool {value!r}")
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, int | float):
        try:
            seconds = float(value)
        except OverflowError:
            raise ValueError(f"{shown(value)} seconds is too large for a duration") from None
        if not math.isfinite(seconds):
            raise ValueError(f"expected a finite number of seconds, got {seconds!r}")
        return seconds
    raise ValueError(
        f"expected seconds (int or float) or a timedelta, got {type(value).__name__} {shown(value)}"
    )


def duration_problem(field: str, value: Any, *, positive: bool) -> str | None:
    """``delay`` (>= 0) or ``timeout`` (>= TIMEOUT_MIN_SECONDS), at most MAX_DURATION_SECONDS."""
    try:
        seconds = seconds_of(value)
    except ValueError as exc:
        return f"{field}: {exc}"
    if positive and seconds < TIMEOUT_MIN_SECONDS:
        return (
            f"{field} must be at least {TIMEOUT_MIN_SECONDS:f} seconds (a microsecond, the "
            f"database's resolution), got {shown(value)}"
        )
    if seconds < 0:
        return f"{field} must be at least 0 seconds, got {shown(value)}"
    if seconds > MAX_DURATION_SECONDS:
        return (
            f"{field} must be at most {MAX_DURATION_SECONDS} seconds (100 years), got "
            f"{shown(value)}"
        )
    return None


def run_at_problem(value: Any) -> str | None:
    if not isinstance(value, datetime):
        return (
            f"run_at must be a timezone-aware datetime, got {type(value).__name__} {shown(value)}"
        )
    try:
        offset = value.utcoffset()
        in_utc = value.astimezone(UTC) if offset is not None else None
    except (OverflowError, ValueError, TypeError) as exc:
        return (
            f"run_at {shown(value)} cannot be converted to UTC ({exc}); use a year from 1 to 9999"
        )
    if in_utc is None:
        return (
            f"run_at must be a timezone-aware datetime, got {shown(value)}; "
            "use django.utils.timezone.now() + timedelta(...)"
        )
    return None


def idempotency_key_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not 1 <= len(value) <= IDEMPOTENCY_KEY_MAX:
        return (
            f"idempotency_key must be a string of 1 to {IDEMPOTENCY_KEY_MAX} characters, "
            f"got {type(value).__name__} {shown(value)}"
        )
    return text_problem(value, "idempotency_key")
