"""The ``WORKHORSE`` settings dict: defaults, reading, and validation.

Settings are read when used, never captured at import time, so
``override_settings(WORKHORSE=...)`` works. Durations accept seconds (int or
float) or a ``timedelta``. ``manage.py check`` reports every invalid value with
its key (see ``checks.py``); the worker refuses to start on one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured

QUEUE_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,52}$")
"""Queue names become NOTIFY channels ``workhorse:<queue>`` (63 bytes at most)."""

LIMIT_1000 = 1000
"""Upper bound of max_attempts and max_stalled, as the table's CHECKs say."""

JOB_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,199}$")

DEFAULTS: dict[str, Any] = {
    "DATABASE": "default",
    "DEFAULT_QUEUE": "default",
    "DEFAULT_MAX_ATTEMPTS": 5,
    "CONCURRENCY": 1,
    "QUEUES": {},
    "LOCK_DURATION": 30.0,
    "LOCK_RENEW_INTERVAL": None,
    "STALLED_INTERVAL": 30.0,
    "MAX_STALLED_COUNT": 1,
    "POLL_INTERVAL": 5.0,
    "SCHEDULE_SWEEP_INTERVAL": 15.0,
    "QUEUE_METRICS_INTERVAL": None,
    "HANDLER_SPAN_NAME": "{name}.run",
    "TRACE_LINKING": "auto",
    "ON_JOB_FAILURE": None,
    "WORKER_ID": None,
    "SHUTDOWN_GRACE": 30.0,
    "PARTITION_DAYS_AHEAD": 7,
    "RETENTION": {},
}
"""Every key of ``WORKHORSE`` with its default; docs/settings.md explains each."""

_DURATIONS = (
    "LOCK_DURATION",
    "LOCK_RENEW_INTERVAL",
    "STALLED_INTERVAL",
    "POLL_INTERVAL",
    "SCHEDULE_SWEEP_INTERVAL",
    "QUEUE_METRICS_INTERVAL",
    "SHUTDOWN_GRACE",
)
_OPTIONAL_DURATIONS = ("LOCK_RENEW_INTERVAL", "QUEUE_METRICS_INTERVAL")


@dataclass(frozen=True)
class WorkhorseSettings:
    """The validated ``WORKHORSE`` settings, durations in seconds."""

    database: str
    default_queue: str
    default_max_attempts: int
    concurrency: int
    queues: Mapping[str, Mapping[str, Any]]
    lock_duration: float
    lock_renew_interval: float
    stalled_interval: float
    max_stalled_count: int
    poll_interval: float
    schedule_sweep_interval: float
    queue_metrics_interval: float | None
    handler_span_name: str
    trace_linking: str
    on_job_failure: str | None
    worker_id: str | None
    shutdown_grace: float
    partition_days_ahead: int


def duration_seconds(value: Any) -> float:
    """Seconds from an int, float or timedelta; ValueError for anything else."""
    if isinstance(value, bool):
        raise ValueError("expected seconds or a timedelta, got a bool")
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, int | float):
        return float(value)
    raise ValueError(f"expected seconds (int or float) or a timedelta, got {type(value).__name__}")


def raw_settings() -> dict[str, Any]:
    """``settings.WORKHORSE`` merged over the defaults (unvalidated)."""
    configured = getattr(django_settings, "WORKHORSE", None) or {}
    if not isinstance(configured, Mapping):
        return {"__invalid__": configured}
    return {**DEFAULTS, **configured}


def problems(raw: Mapping[str, Any] | None = None) -> list[tuple[str, str]]:
    """Every invalid value as ``(key, message)``; empty when all is well."""
    raw = raw_settings() if raw is None else raw
    if "__invalid__" in raw:
        return [("WORKHORSE", "must be a dict, e.g. WORKHORSE = {'CONCURRENCY': 4}")]
    found: list[tuple[str, str]] = []
    for key in raw:
        if key not in DEFAULTS:
            found.append(
                (key, f"is not a django-workhorse setting; known keys: {', '.join(DEFAULTS)}")
            )
    for key in _DURATIONS:
        value = raw[key]
        if value is None and key in _OPTIONAL_DURATIONS:
            continue
        try:
            seconds = duration_seconds(value)
        except ValueError as exc:
            found.append((key, str(exc)))
            continue
        if seconds <= 0:
            found.append((key, f"must be a positive duration, got {value!r}"))
    for key, low, high in (
        ("CONCURRENCY", 1, 10_000),
        ("DEFAULT_MAX_ATTEMPTS", 1, LIMIT_1000),
        ("MAX_STALLED_COUNT", 0, LIMIT_1000),
        ("PARTITION_DAYS_AHEAD", 1, 366),
    ):
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            found.append((key, f"must be a whole number from {low} to {high}, got {value!r}"))
    if not isinstance(raw["DATABASE"], str) or raw["DATABASE"] not in django_settings.DATABASES:
        found.append(
            (
                "DATABASE",
                f"{raw['DATABASE']!r} is not an alias of settings.DATABASES "
                f"({', '.join(django_settings.DATABASES)})",
            )
        )
    if not isinstance(raw["DEFAULT_QUEUE"], str) or not QUEUE_NAME_RE.match(raw["DEFAULT_QUEUE"]):
        found.append(("DEFAULT_QUEUE", queue_name_problem(raw["DEFAULT_QUEUE"])))
    queues = raw["QUEUES"]
    if not isinstance(queues, Mapping):
        found.append(("QUEUES", "must be a dict such as {'email': {'concurrency': 5}}"))
    else:
        for name, options in queues.items():
            if not isinstance(name, str) or not QUEUE_NAME_RE.match(name):
                found.append((f"QUEUES[{name!r}]", queue_name_problem(name)))
            if not isinstance(options, Mapping) or set(options) - {"concurrency"}:
                found.append((f"QUEUES[{name!r}]", "must be a dict with the key 'concurrency'"))
                continue
            concurrency = options.get("concurrency", 1)
            if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
                found.append(
                    (
                        f"QUEUES[{name!r}]['concurrency']",
                        f"must be a whole number >= 1, got {concurrency!r}",
                    )
                )
    renew, lock = raw["LOCK_RENEW_INTERVAL"], raw["LOCK_DURATION"]
    if renew is not None and not any(k == "LOCK_RENEW_INTERVAL" for k, _ in found):
        try:
            if duration_seconds(renew) >= duration_seconds(lock):
                found.append(
                    (
                        "LOCK_RENEW_INTERVAL",
                        "must be shorter than LOCK_DURATION, or leases expire between heartbeats",
                    )
                )
        except ValueError:
            pass
    for key in ("ON_JOB_FAILURE", "WORKER_ID"):
        value = raw[key]
        if value is not None and (not isinstance(value, str) or not value):
            found.append((key, f"must be a non-empty string or None, got {value!r}"))
    if raw["TRACE_LINKING"] not in ("auto", "parent", "link", "none"):
        found.append(("TRACE_LINKING", "must be one of 'auto', 'parent', 'link', 'none'"))
    if not isinstance(raw["HANDLER_SPAN_NAME"], str):
        found.append(("HANDLER_SPAN_NAME", "must be a string such as '{name}.run'"))
    found.extend(retention_problems(raw["RETENTION"]))
    return found


def job_defaults() -> tuple[str, str, int, int]:
    """(DATABASE, DEFAULT_QUEUE, DEFAULT_MAX_ATTEMPTS, MAX_STALLED_COUNT) for job
    definitions, without validating the rest of the settings.

    Job modules are imported while Django starts; an invalid setting elsewhere
    must not stop ``manage.py check`` from reporting it. A value of the wrong
    type here falls back to its default (the check reports it too).
    """
    raw = raw_settings()

    def pick(key: str, kind: type) -> Any:
        value = raw.get(key, DEFAULTS[key])
        return value if isinstance(value, kind) and not isinstance(value, bool) else DEFAULTS[key]

    return (
        pick("DATABASE", str),
        pick("DEFAULT_QUEUE", str),
        pick("DEFAULT_MAX_ATTEMPTS", int),
        pick("MAX_STALLED_COUNT", int),
    )


def queue_name_problem(name: object) -> str:
    """Why ``name`` is not a valid queue name, in words a user can act on."""
    if not isinstance(name, str):
        return f"a queue name must be a string, got {type(name).__name__}"
    if len(name) > 53:
        return (
            f"queue name {name[:20]!r}... is {len(name)} characters; queues become PostgreSQL "
            "NOTIFY channels ('workhorse:<queue>', at most 63 bytes), so use at most 53"
        )
    return (
        f"queue name {name!r} is not valid: use 1 to 53 characters of letters, digits, "
        "'_', '.' and '-', not starting with '.' or '-'"
    )


def get_settings(overrides: Mapping[str, Any] | None = None) -> WorkhorseSettings:
    """The current settings, validated; ImproperlyConfigured names the bad key.

    ``overrides`` (from ``runworker`` flags) take precedence over ``WORKHORSE``.
    """
    raw = {**raw_settings(), **(overrides or {})}
    bad = problems(raw)
    if bad:
        raise ImproperlyConfigured(
            "; ".join(f"WORKHORSE[{key!r}] {message}" for key, message in bad)
        )
    lock = duration_seconds(raw["LOCK_DURATION"])
    renew = raw["LOCK_RENEW_INTERVAL"]
    metrics = raw["QUEUE_METRICS_INTERVAL"]
    return WorkhorseSettings(
        database=raw["DATABASE"],
        default_queue=raw["DEFAULT_QUEUE"],
        default_max_attempts=raw["DEFAULT_MAX_ATTEMPTS"],
        concurrency=raw["CONCURRENCY"],
        queues=dict(raw["QUEUES"]),
        lock_duration=lock,
        lock_renew_interval=lock / 2 if renew is None else duration_seconds(renew),
        stalled_interval=duration_seconds(raw["STALLED_INTERVAL"]),
        max_stalled_count=raw["MAX_STALLED_COUNT"],
        poll_interval=duration_seconds(raw["POLL_INTERVAL"]),
        schedule_sweep_interval=duration_seconds(raw["SCHEDULE_SWEEP_INTERVAL"]),
        queue_metrics_interval=None if metrics is None else duration_seconds(metrics),
        handler_span_name=raw["HANDLER_SPAN_NAME"],
        trace_linking=raw["TRACE_LINKING"],
        on_job_failure=raw["ON_JOB_FAILURE"],
        worker_id=raw["WORKER_ID"],
        shutdown_grace=duration_seconds(raw["SHUTDOWN_GRACE"]),
        partition_days_ahead=raw["PARTITION_DAYS_AHEAD"],
    )


def import_callable(path: str) -> Callable[..., Any]:
    """The callable at a dotted path, with an error naming the path on failure."""
    from django.utils.module_loading import import_string

    try:
        target = import_string(path)
    except ImportError as exc:
        raise ImproperlyConfigured(f"cannot import {path!r}: {exc}") from exc
    if not callable(target):
        raise ImproperlyConfigured(f"{path!r} is not callable")
    return target


# -- RETENTION: how long history and finished jobs are kept (docs/retention.md)

RETENTION_DEFAULTS: dict[str, Any] = {
    "HISTORY": timedelta(days=7),
    "FINISHED_JOBS": timedelta(days=7),
    "INTERVAL": 3600.0,
    "BATCH_SIZE": 10_000,
}
"""Every key of ``WORKHORSE["RETENTION"]`` with its default."""


@dataclass(frozen=True)
class RetentionSettings:
    """Validated ``WORKHORSE["RETENTION"]``; durations in seconds, None = keep forever."""

    history: float | None
    finished_jobs: float | None
    interval: float | None
    """How often each worker tries a prune; None: workers never prune."""
    batch_size: int


def retention_problems(value: Any) -> list[tuple[str, str]]:
    """Every invalid value of ``WORKHORSE["RETENTION"]`` as ``(key, message)``."""
    if not isinstance(value, Mapping):
        return [("RETENTION", "must be a dict such as {'HISTORY': timedelta(days=7)}")]
    found = [
        (
            f"RETENTION[{key!r}]",
            f"is not a retention setting; known keys: {', '.join(RETENTION_DEFAULTS)}",
        )
        for key in value
        if key not in RETENTION_DEFAULTS
    ]
    merged = {**RETENTION_DEFAULTS, **value}
    for key in ("HISTORY", "FINISHED_JOBS", "INTERVAL"):
        if merged[key] is None:
            continue
        try:
            seconds = duration_seconds(merged[key])
        except ValueError as exc:
            found.append((f"RETENTION[{key!r}]", f"{exc}, or None"))
            continue
        if not 0 < seconds < 1e10:
            found.append(
                (f"RETENTION[{key!r}]", f"must be a positive duration, got {merged[key]!r}")
            )
    batch = merged["BATCH_SIZE"]
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= 1_000_000:
        found.append(
            ("RETENTION['BATCH_SIZE']", f"must be a whole number from 1 to 1000000, got {batch!r}")
        )
    return found


def get_retention() -> RetentionSettings:
    """The current retention settings, validated (ImproperlyConfigured names a bad key)."""
    value = raw_settings().get("RETENTION", {})
    bad = retention_problems(value)
    if bad:
        raise ImproperlyConfigured(
            "; ".join(f"WORKHORSE[{key!r}] {message}" for key, message in bad)
        )
    merged = {**RETENTION_DEFAULTS, **value}

    def seconds(key: str) -> float | None:
        return None if merged[key] is None else duration_seconds(merged[key])

    return RetentionSettings(
        history=seconds("HISTORY"),
        finished_jobs=seconds("FINISHED_JOBS"),
        interval=seconds("INTERVAL"),
        batch_size=merged["BATCH_SIZE"],
    )
