"""The ``WORKHORSE`` settings dict: defaults, reading, and validation.

Settings are read when used, never captured at import time, so
``override_settings(WORKHORSE=...)`` works. Durations accept seconds (int or
float) or a ``timedelta``. ``manage.py check`` reports every invalid value with
its key (see ``operations/checks.py``); the worker refuses to start on one.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, NamedTuple, cast

from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured

from . import configured_jobs
from .defaults import JOB_DEFAULTS
from .limits import (
    CADENCE_MIN_SECONDS,
    CONCURRENCY_MAX,
    MAX_ATTEMPTS_MAX,
    MAX_DURATION_SECONDS,
    MAX_STALLED_MAX,
    MIN_INTERVAL_SECONDS,
    WORKER_ID_PREFIX_MAX,
    queue_name_problem,
    seconds_of,
    shown,
    text_problem,
)

DEFAULTS: dict[str, Any] = {
    "DATABASE": "default",
    "STORES": None,
    "DEFAULT_QUEUE": JOB_DEFAULTS.queue,
    "DEFAULT_MAX_ATTEMPTS": JOB_DEFAULTS.max_attempts,
    "CONCURRENCY": 1,
    "QUEUES": {},
    "LOCK_DURATION": 30.0,
    "LOCK_RENEW_INTERVAL": None,
    "STALLED_INTERVAL": 30.0,
    "MAX_STALLED_COUNT": JOB_DEFAULTS.max_stalled,
    "POLL_INTERVAL": None,
    "SCHEDULE_SWEEP_INTERVAL": 15.0,
    "QUEUE_METRICS_INTERVAL": None,
    "VACUUM_INTERVAL": 30.0,
    "HANDLER_SPAN_NAME": "{name}.run",
    "TRACE_LINKING": "auto",
    "ON_JOB_FAILURE": None,
    "ON_JOB_CANCELED": None,
    "WORKER_ID": None,
    "SHUTDOWN_GRACE": 30.0,
    "PARTITION_DAYS_AHEAD": 7,
    "SCHEDULES": {},
    "LOG_FORMAT": "text",
    "RETENTION": {},
    "LISTEN_DATABASE": None,
    "JOB_OPTIONS": {},
}
"""Every key of ``WORKHORSE`` with its default; docs/settings.md explains each."""

_DURATIONS = (
    "LOCK_DURATION",
    "LOCK_RENEW_INTERVAL",
    "STALLED_INTERVAL",
    "POLL_INTERVAL",
    "SCHEDULE_SWEEP_INTERVAL",
    "QUEUE_METRICS_INTERVAL",
    "VACUUM_INTERVAL",
    "SHUTDOWN_GRACE",
)
_OPTIONAL_DURATIONS = (
    "LOCK_RENEW_INTERVAL",
    "POLL_INTERVAL",
    "QUEUE_METRICS_INTERVAL",
    "VACUUM_INTERVAL",
)

POLLING_POLL_INTERVAL = 5.0
"""``POLL_INTERVAL`` left at None, for a worker whose wake-ups cannot work
(behind a pooler without ``LISTEN_DATABASE``): its only way to find work."""
LISTENING_POLL_INTERVAL = 60.0
"""``POLL_INTERVAL`` left at None, for a worker whose LISTEN works: a safety
net under the notifications, which a reconnect makes up for anyway."""
CADENCE_FLOORS = {
    key: (2 if key == "LOCK_DURATION" else 1) * CADENCE_MIN_SECONDS
    for key in _DURATIONS
    if key != "SHUTDOWN_GRACE"
}
"""The shortest value of each duration that paces a worker's loops."""
_OFF_WITH_NONE = ("QUEUE_METRICS_INTERVAL", "VACUUM_INTERVAL")
"""Optional durations whose None turns the work off: a bad value's message says so."""


@dataclass(frozen=True)
class WorkhorseSettings:
    """The validated ``WORKHORSE`` settings, durations in seconds."""

    database: str
    concurrency: int
    queues: Mapping[str, Mapping[str, Any]]
    lock_duration: float
    lock_renew_interval: float
    stalled_interval: float
    poll_interval: float
    """How long an idle worker waits at most before it claims again while
    it polls (no wake-ups): ``POLL_INTERVAL``, or 5 s when it is None."""
    listening_poll_interval: float
    """The same for a worker whose LISTEN works: ``POLL_INTERVAL``, or 60 s
    when it is None."""
    schedule_sweep_interval: float
    queue_metrics_interval: float | None
    handler_span_name: str
    trace_linking: str
    on_job_failure: str | None
    worker_id: str | None
    shutdown_grace: float
    partition_days_ahead: int
    schedules: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    log_format: str = "text"
    on_job_canceled: str | None = None
    vacuum_interval: float | None = 30.0
    """How often the worker that leads the fleet's sweeps looks at the dead
    tuples of the tables with churn and vacuums those past the threshold;
    None: never (docs/worker.md#vacuum)."""
    listen_database: str | Mapping[str, str] | None = None
    """The alias a worker opens its LISTEN connection on: one alias (for the
    worker of ``DATABASE``) or a dict from the worker's alias to it; None:
    the worker's own alias (docs/settings.md#listen_database)."""

    def listen_alias(self, alias: str) -> str:
        """The alias the LISTEN connection of a worker serving ``alias`` opens on."""
        chosen = self.listen_database
        if isinstance(chosen, str):
            return chosen if alias == self.database else alias
        if isinstance(chosen, Mapping):
            return chosen.get(alias, alias)
        return alias


def duration_seconds(value: Any) -> float:
    """Seconds from an int, float or timedelta; ValueError for anything else,
    NaN and the infinities included."""
    return seconds_of(value)


QUEUE_KEYS = frozenset({"concurrency", "global_concurrency", "rate", "period"})
"""The keys of ``WORKHORSE['QUEUES'][name]``: slots per worker, then the
queue's limits shared by every worker (see docs/settings.md)."""

QUEUE_LIMIT_KEYS = ("global_concurrency", "rate", "period")


def queue_limit_problems(concurrency: Any, rate: Any, period: Any) -> list[str]:
    """What is wrong with a queue's limits, named by their ``QUEUES`` keys
    (``Admin.set_queue_limits`` takes the same values); empty when all is well."""
    found = []
    if concurrency is not None and (
        isinstance(concurrency, bool)
        or not isinstance(concurrency, int)
        or not 1 <= concurrency <= 100_000
    ):
        found.append(
            "'global_concurrency' must be a whole number from 1 to 100000, got "
            f"{shown(concurrency)}"
        )
    if (rate is None) != (period is None):
        found.append(
            "'rate' and 'period' go together: at most 'rate' jobs started per 'period' "
            "seconds, e.g. {'rate': 100, 'period': 60}"
        )
    if rate is not None and (
        isinstance(rate, bool) or not isinstance(rate, int) or not 1 <= rate <= 10_000
    ):
        found.append(f"'rate' must be a whole number from 1 to 10000, got {shown(rate)}")
    if period is not None:
        try:
            seconds = duration_seconds(period)
        except ValueError as exc:
            found.append(f"'period' {exc}")
        else:
            # PostgreSQL keeps an interval to the microsecond: a shorter
            # period would be stored as 0.
            if not MIN_INTERVAL_SECONDS <= seconds <= 366 * 86400:
                found.append(
                    f"'period' must be more than 0 (at least 1 microsecond) and at most 366 days, "
                    f"got {shown(period)}"
                )
    return found


def worker_id_problem(prefix: str) -> str:
    """What is wrong with a worker id prefix longer than WORKER_ID_PREFIX_MAX."""
    return (
        f"must be at most {WORKER_ID_PREFIX_MAX} characters (a worker id travels in "
        f"notifications, which PostgreSQL limits to 8,000 bytes), got {len(prefix)}"
    )


def cadence_problem(floor: float) -> str:
    """What is wrong with a lease or loop period shorter than ``floor``."""
    return (
        f"must be at least {floor:g} seconds (shorter, a worker would query the database "
        "without pause)"
    )


def raw_settings() -> dict[str, Any]:
    """``settings.WORKHORSE`` merged over the defaults (unvalidated)."""
    configured = getattr(django_settings, "WORKHORSE", None)
    if configured is None:
        return dict(DEFAULTS)
    if not isinstance(configured, Mapping):
        return {"__invalid__": configured}
    return {**DEFAULTS, **configured}


def setting_path(key: object) -> str:
    """How a problem's key reads in a message: ``WORKHORSE['QUEUES']['email']``
    for the key ``QUEUES['email']``, ``WORKHORSE`` for the dict itself, as the
    value is written in settings.py."""
    if not isinstance(key, str):  # a key of WORKHORSE that is no setting's name
        return f"WORKHORSE[{shown(key)}]"
    if key == "WORKHORSE":
        return key
    top, bracket, rest = key.partition("[")
    return f"WORKHORSE[{top!r}]{bracket}{rest}"


def problems(raw: Mapping[str, Any] | None = None) -> list[tuple[str, str]]:
    """Every invalid value as ``(key, message)``; empty when all is well."""
    raw = raw_settings() if raw is None else raw
    if "__invalid__" in raw:
        return [
            (
                "WORKHORSE",
                "must be a dict, e.g. WORKHORSE = {'CONCURRENCY': 4}, got "
                f"{type(raw['__invalid__']).__name__} {shown(raw['__invalid__'])}",
            )
        ]
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
        off = ", or None to turn it off" if key in _OFF_WITH_NONE else ""
        try:
            seconds = duration_seconds(value)
        except ValueError as exc:
            found.append((key, f"{exc}{off}"))
            continue
        if seconds <= 0:
            found.append((key, f"must be a positive duration{off}, got {shown(value)}"))
        elif seconds < CADENCE_FLOORS.get(key, 0):
            found.append((key, f"{cadence_problem(CADENCE_FLOORS[key])}{off}, got {shown(value)}"))
        elif seconds > MAX_DURATION_SECONDS:
            found.append(
                (key, f"must be at most {MAX_DURATION_SECONDS} seconds{off}, got {shown(value)}")
            )
    for key, low, high in (
        ("CONCURRENCY", 1, CONCURRENCY_MAX),
        ("DEFAULT_MAX_ATTEMPTS", 1, MAX_ATTEMPTS_MAX),
        ("MAX_STALLED_COUNT", 0, MAX_STALLED_MAX),
        ("PARTITION_DAYS_AHEAD", 1, 366),
    ):
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            found.append((key, f"must be a whole number from {low} to {high}, got {shown(value)}"))
    if not isinstance(raw["DATABASE"], str) or raw["DATABASE"] not in django_settings.DATABASES:
        found.append(
            (
                "DATABASE",
                f"{shown(raw['DATABASE'])} is not an alias of settings.DATABASES "
                f"({', '.join(django_settings.DATABASES)})",
            )
        )
    problem = queue_name_problem(raw["DEFAULT_QUEUE"])
    if problem:
        found.append(("DEFAULT_QUEUE", problem))
    queues = raw["QUEUES"]
    if not isinstance(queues, Mapping):
        found.append(
            (
                "QUEUES",
                "must be a dict such as {'email': {'concurrency': 5}}, got "
                f"{type(queues).__name__} {shown(queues)}",
            )
        )
    else:
        for name, options in queues.items():
            problem = queue_name_problem(name)
            if problem:
                found.append((f"QUEUES[{shown(name)}]", problem))
            if not isinstance(options, Mapping) or set(options) - QUEUE_KEYS:
                what = (
                    f"got {type(options).__name__} {shown(options)}"
                    if not isinstance(options, Mapping)
                    else "unknown key(s) "
                    + ", ".join(sorted(map(shown, set(options) - QUEUE_KEYS)))
                )
                found.append(
                    (
                        f"QUEUES[{shown(name)}]",
                        "must be a dict with the keys 'concurrency', 'global_concurrency', "
                        f"'rate' and 'period' (each optional); {what}",
                    )
                )
                continue
            for problem in queue_limit_problems(
                options.get("global_concurrency"), options.get("rate"), options.get("period")
            ):
                found.append((f"QUEUES[{shown(name)}]", problem))
            concurrency = options.get("concurrency", 1)
            if (
                isinstance(concurrency, bool)
                or not isinstance(concurrency, int)
                or not 1 <= concurrency <= CONCURRENCY_MAX
            ):
                found.append(
                    (
                        f"QUEUES[{shown(name)}]['concurrency']",
                        f"must be a whole number from 1 to {CONCURRENCY_MAX} (the slots "
                        f"of one worker process), got {shown(concurrency)}",
                    )
                )
    renew, lock = raw["LOCK_RENEW_INTERVAL"], raw["LOCK_DURATION"]
    if renew is not None and not any(k == "LOCK_RENEW_INTERVAL" for k, _ in found):
        try:
            if duration_seconds(renew) >= duration_seconds(lock):
                found.append(
                    (
                        "LOCK_RENEW_INTERVAL",
                        f"must be shorter than LOCK_DURATION, or leases expire between "
                        f"heartbeats; got {shown(renew)} with LOCK_DURATION {shown(lock)}: "
                        "lower it, or "
                        "leave it out to renew at half of LOCK_DURATION",
                    )
                )
        except ValueError:
            pass
    for key in ("ON_JOB_FAILURE", "ON_JOB_CANCELED", "WORKER_ID"):
        value = raw[key]
        if value is not None and (not isinstance(value, str) or not value):
            found.append((key, f"must be a non-empty string or None, got {shown(value)}"))
        elif value is not None and (problem := text_problem(value, "the value")):
            found.append((key, problem))
    worker_id = raw["WORKER_ID"]
    if isinstance(worker_id, str) and len(worker_id) > WORKER_ID_PREFIX_MAX:
        found.append(("WORKER_ID", worker_id_problem(worker_id)))
    found.extend(observability_problems(raw))
    found.extend(retention_problems(raw["RETENTION"]))
    found.extend(listen_database_problems(raw["LISTEN_DATABASE"]))
    found.extend(configured_jobs.problems(raw["JOB_OPTIONS"]))
    return found


def listen_database_problems(value: Any) -> list[tuple[str, str]]:
    """LISTEN_DATABASE must be None, an alias, or a dict of alias to alias,
    every alias one of settings.DATABASES on PostgreSQL."""
    aliases = django_settings.DATABASES
    shape = (
        "must be None, the alias of settings.DATABASES that connects to PostgreSQL "
        "directly for the worker's LISTEN connection (e.g. 'default_direct'), or a dict "
        "from a worker's alias to such an alias"
    )
    if value is None:
        return []
    if isinstance(value, str):
        pairs = [("LISTEN_DATABASE", value)]
    elif isinstance(value, Mapping):
        pairs = []
        for worker_alias, listen_alias in value.items():
            key = f"LISTEN_DATABASE[{shown(worker_alias)}]"
            if not isinstance(worker_alias, str) or worker_alias not in aliases:
                return [
                    (
                        key,
                        f"{shown(worker_alias)} is not an alias of settings.DATABASES "
                        f"({', '.join(aliases)}); {shape}",
                    )
                ]
            pairs.append((key, listen_alias))
    else:
        return [("LISTEN_DATABASE", f"{shape}; got {type(value).__name__} {shown(value)}")]
    found = []
    for key, alias in pairs:
        if not isinstance(alias, str) or alias not in aliases:
            found.append(
                (
                    key,
                    f"{shown(alias)} is not an alias of settings.DATABASES "
                    f"({', '.join(aliases)}); {shape}",
                )
            )
        elif "postgresql" not in str(aliases[alias].get("ENGINE", "")):
            found.append(
                (
                    key,
                    f"names {alias!r}, whose ENGINE is {aliases[alias].get('ENGINE')!r}: "
                    "LISTEN needs a PostgreSQL alias",
                )
            )
    return found


def observability_problems(raw: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Problems of SCHEDULES, LOG_FORMAT, TRACE_LINKING, HANDLER_SPAN_NAME and
    of QUEUE_METRICS_INTERVAL without the prometheus extra."""
    from .cron import settings_problems

    found = settings_problems(raw["SCHEDULES"])
    if raw["LOG_FORMAT"] not in ("text", "json"):
        found.append(("LOG_FORMAT", f"must be 'text' or 'json', got {shown(raw['LOG_FORMAT'])}"))
    if raw["TRACE_LINKING"] not in ("auto", "parent", "link", "off", "none"):
        found.append(
            (
                "TRACE_LINKING",
                "must be one of 'auto', 'parent', 'link', 'off' (or its alias 'none'), "
                f"got {shown(raw['TRACE_LINKING'])}",
            )
        )
    span_name = raw["HANDLER_SPAN_NAME"]
    if not span_name_ok(span_name):
        found.append(
            (
                "HANDLER_SPAN_NAME",
                f"must be a non-empty string using only {{name}} and {{queue}}, bare (no "
                f"attribute, index, format spec or conversion), such as '{{name}}.run', "
                f"got {shown(span_name, 80)}",
            )
        )
    if raw["QUEUE_METRICS_INTERVAL"] is not None and not installed("prometheus_client"):
        found.append(
            (
                "QUEUE_METRICS_INTERVAL",
                "needs prometheus-client: pip install 'django-workhorse[prometheus]', "
                "or set it to None",
            )
        )
    return found


def span_name_ok(value: Any) -> bool:
    """Whether ``value`` is a HANDLER_SPAN_NAME: a non-empty string whose only
    fields are ``{name}`` and ``{queue}``, bare.

    Parsed, not formatted: formatting a trial name would run a format spec
    such as ``{name:>999999999999}`` (a MemoryError in ``manage.py check``);
    a spec or a conversion has no use in a span name and is refused."""
    if not isinstance(value, str) or not value:
        return False
    try:
        fields = [
            (field, spec, conversion)
            for _literal, field, spec, conversion in string.Formatter().parse(value)
            if field is not None
        ]
    except ValueError:  # an unmatched "{" or "}"
        return False
    return all(
        field in ("name", "queue") and not spec and not conversion
        for field, spec, conversion in fields
    )


def installed(module: str) -> bool:
    """Whether a top-level module can be imported, without importing it."""
    from importlib.util import find_spec

    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):
        return False


class SettingsJobDefaults(NamedTuple):
    """What a job that names none of these gets, from the settings as they are now."""

    database: str
    queue: str
    max_attempts: int
    max_stalled: int


_job_defaults_read: tuple[object, SettingsJobDefaults] | None = None
"""The ``WORKHORSE`` object ``job_defaults`` last read, and what it found there."""


def job_defaults() -> SettingsJobDefaults:
    """(DATABASE, DEFAULT_QUEUE, DEFAULT_MAX_ATTEMPTS, MAX_STALLED_COUNT), read
    when a job is enqueued, without validating the rest of the settings.

    Job modules are imported while Django starts; an invalid setting elsewhere
    must not stop ``manage.py check`` from reporting it. A value of the wrong
    type here falls back to its default (the check reports it too).

    Every enqueue asks, so the answer is kept for as long as
    ``settings.WORKHORSE`` is the same object: ``override_settings`` and an
    assignment replace the object (a dict changed in place is not seen, as
    Django's own settings caches do not see one). The same value is returned
    each time, so callers may key caches of their own on it.
    """
    global _job_defaults_read
    configured = getattr(django_settings, "WORKHORSE", None)
    read = _job_defaults_read
    if read is not None and read[0] is configured:
        return read[1]
    found = _read_job_defaults()
    _job_defaults_read = (configured, found)
    return found


def _read_job_defaults() -> SettingsJobDefaults:
    raw = raw_settings()

    def pick(key: str, kind: type) -> Any:
        value = raw.get(key, DEFAULTS[key])
        return value if isinstance(value, kind) and not isinstance(value, bool) else DEFAULTS[key]

    return SettingsJobDefaults(
        pick("DATABASE", str),
        pick("DEFAULT_QUEUE", str),
        pick("DEFAULT_MAX_ATTEMPTS", int),
        pick("MAX_STALLED_COUNT", int),
    )


def get_settings(
    overrides: Mapping[str, Any] | None = None, *, named: Mapping[str, str] | None = None
) -> WorkhorseSettings:
    """The current settings, validated; ImproperlyConfigured names the bad key.

    ``overrides`` (from ``runworker`` flags) take precedence over ``WORKHORSE``;
    a problem of an overridden key is named by ``named[key]`` (the flag that
    gave it), not by a setting the user may never have written.
    """
    raw = {**raw_settings(), **(overrides or {})}
    bad = problems(raw)
    if bad:
        given = {key: name for key, name in (named or {}).items() if key in (overrides or {})}
        raise ImproperlyConfigured(
            "; ".join(f"{given.get(key) or setting_path(key)} {message}" for key, message in bad)
        )
    lock = duration_seconds(raw["LOCK_DURATION"])
    renew = raw["LOCK_RENEW_INTERVAL"]
    metrics = raw["QUEUE_METRICS_INTERVAL"]
    vacuum = raw["VACUUM_INTERVAL"]
    poll = raw["POLL_INTERVAL"]
    return WorkhorseSettings(
        database=raw["DATABASE"],
        concurrency=raw["CONCURRENCY"],
        queues=dict(raw["QUEUES"]),
        lock_duration=lock,
        lock_renew_interval=lock / 2 if renew is None else duration_seconds(renew),
        stalled_interval=duration_seconds(raw["STALLED_INTERVAL"]),
        poll_interval=POLLING_POLL_INTERVAL if poll is None else duration_seconds(poll),
        listening_poll_interval=(
            LISTENING_POLL_INTERVAL if poll is None else duration_seconds(poll)
        ),
        schedule_sweep_interval=duration_seconds(raw["SCHEDULE_SWEEP_INTERVAL"]),
        queue_metrics_interval=None if metrics is None else duration_seconds(metrics),
        handler_span_name=raw["HANDLER_SPAN_NAME"],
        trace_linking=raw["TRACE_LINKING"],
        on_job_failure=raw["ON_JOB_FAILURE"],
        on_job_canceled=raw["ON_JOB_CANCELED"],
        worker_id=raw["WORKER_ID"],
        shutdown_grace=duration_seconds(raw["SHUTDOWN_GRACE"]),
        partition_days_ahead=raw["PARTITION_DAYS_AHEAD"],
        schedules=dict(raw["SCHEDULES"]),
        log_format=raw["LOG_FORMAT"],
        vacuum_interval=None if vacuum is None else duration_seconds(vacuum),
        listen_database=raw["LISTEN_DATABASE"],
    )


def import_callable(path: str) -> Callable[..., Any]:
    """The callable at a dotted path, with an error naming the path on failure."""
    from django.utils.module_loading import import_string

    try:
        target = import_string(path)
    except ImportError as exc:
        raise ImproperlyConfigured(f"cannot import {path!r}: {exc}") from exc
    except Exception as exc:  # the module raised while it was imported
        raise ImproperlyConfigured(f"cannot import {path!r}: {type(exc).__name__}: {exc}") from exc
    if not callable(target):
        raise ImproperlyConfigured(f"{path!r} is not callable")
    return cast("Callable[..., Any]", target)


# -- RETENTION: how long history and finished jobs are kept (docs/retention.md)

RETENTION_DEFAULTS: dict[str, Any] = {
    "HISTORY": timedelta(days=7),
    "FINISHED_JOBS": timedelta(days=7),
    "INTERVAL": 3600.0,
    "BATCH_SIZE": 10_000,
}
"""Every key of ``WORKHORSE["RETENTION"]`` with its default."""

RETENTION_MAX_SECONDS = 1e10
"""The longest window of ``HISTORY``, ``FINISHED_JOBS`` and ``INTERVAL``."""


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
        return [
            (
                "RETENTION",
                "must be a dict such as {'HISTORY': timedelta(days=7)}, got "
                f"{type(value).__name__} {shown(value)}",
            )
        ]
    found = [
        (
            f"RETENTION[{shown(key)}]",
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
        if seconds <= 0:
            found.append(
                (f"RETENTION[{key!r}]", f"must be a positive duration, got {shown(merged[key])}")
            )
        elif key == "INTERVAL" and seconds < CADENCE_MIN_SECONDS:
            found.append(
                (
                    "RETENTION['INTERVAL']",
                    f"{cadence_problem(CADENCE_MIN_SECONDS)}, or None to leave retention to "
                    f"workhorse_prune; got {shown(merged[key])}",
                )
            )
        elif seconds >= RETENTION_MAX_SECONDS:
            # A cut-off that far back would leave the years Python can represent.
            none = "leave retention to workhorse_prune" if key == "INTERVAL" else "keep forever"
            found.append(
                (
                    f"RETENTION[{key!r}]",
                    f"must be shorter than {RETENTION_MAX_SECONDS:.0f} seconds (about 300 "
                    f"years), got {shown(merged[key])}; use None to {none}",
                )
            )
    batch = merged["BATCH_SIZE"]
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= 1_000_000:
        found.append(
            (
                "RETENTION['BATCH_SIZE']",
                f"must be a whole number from 1 to 1000000, got {shown(batch)}",
            )
        )
    return found


def get_retention() -> RetentionSettings:
    """The current retention settings, validated (ImproperlyConfigured names a bad key)."""
    value = raw_settings().get("RETENTION", {})
    bad = retention_problems(value)
    if bad:
        raise ImproperlyConfigured(
            "; ".join(f"{setting_path(key)} {message}" for key, message in bad)
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
