"""Cron expressions and the shape of ``WORKHORSE["SCHEDULES"]``, checked without
touching the registry or the database (settings checks use this)."""

from __future__ import annotations

import functools
import re
import zoneinfo
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from .limits import shown

CATCH_UP_MODES = ("latest", "all")
"""``latest``: the slots missed while no worker swept make one job (for the
latest of them); ``all``: one job per missed slot, ALL_SLOTS_PER_SWEEP at a time."""

ALL_SLOTS_PER_SWEEP = 100
"""With ``catch_up="all"``, the most slots one sweep enqueues for a schedule;
the next sweep goes on from there."""

SCHEDULE_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}")
"""As the table's CHECK says; also the job-name part of each slot's idempotency key.
Use with ``fullmatch``: ``match`` with ``$`` would accept a trailing newline."""

SETTINGS_KEYS = frozenset({"job", "cron", "timezone", "payload", "catch_up"})


NOT_ZONES = frozenset({"localtime", "posixrules", "Factory"})
"""Files of the zoneinfo directory that are no place's zone: ``localtime``
is the host's own zone (two hosts in different zones would plan different
slots of one schedule), ``posixrules`` the default rules of POSIX TZ
strings, ``Factory`` the "zone not set" placeholder. The SQL function
``workhorse_schedule_sync_v1`` refuses the same names."""


@functools.cache
def iana_zone_names() -> frozenset[str]:
    """The zone names of the IANA database on this host (zones and their
    links, as ``zoneinfo.available_timezones`` lists them: no ``posix/`` or
    ``right/`` copies, no files that are not zones), without NOT_ZONES."""
    return frozenset(zoneinfo.available_timezones()) - NOT_ZONES


def timezone_problem(timezone: Any) -> str | None:
    """Why ``timezone`` cannot be a schedule's zone, or None when it can: it
    must name a zone of the IANA database that ZoneInfo loads, the same
    place whichever host reads it."""
    if isinstance(timezone, str) and timezone in iana_zone_names():
        try:
            ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            pass
        else:
            return None
    return (
        f"timezone {shown(timezone)} is not an IANA time zone name such as 'Europe/Paris' or "
        "'UTC' (the host-dependent 'localtime', 'posixrules' and 'Factory' are not zones)"
    )


def cron_problem(cron: Any, timezone: Any = "UTC") -> str | None:
    """Why ``cron`` (read in ``timezone``) cannot be a schedule, or None when it can."""
    if not isinstance(cron, str) or not cron.strip():
        return f"cron must be a string such as '*/5 * * * *', got {shown(cron)}"
    if problem := timezone_problem(timezone):
        return problem
    zone = ZoneInfo(timezone)
    try:
        next(CronSim(cron, datetime(2000, 1, 1, tzinfo=zone)))
    except (CronSimError, StopIteration, ValueError) as exc:
        return (
            f"cron {cron!r} is not valid ({exc}): use five fields (minute hour day month "
            "weekday) or six with seconds first"
        )
    return None


def schedule_key(name: Any) -> str:
    """The key a problem of ``WORKHORSE['SCHEDULES'][name]`` is reported under,
    ``SCHEDULES['nightly']``, whatever ``name`` is (one that is not a string
    is itself a problem, and may be an int too long for ``repr``)."""
    return f"SCHEDULES[{name!r}]" if isinstance(name, str) else f"SCHEDULES[{shown(name)}]"


def settings_problems(raw: Any) -> list[tuple[str, str]]:
    """Shape problems of ``WORKHORSE["SCHEDULES"]`` as ``(key, message)``.

    Whether each named job exists is checked when a worker starts (jobs may
    not be imported yet when settings are checked).
    """
    if not isinstance(raw, Mapping):
        return [
            (
                "SCHEDULES",
                "must be a dict such as {'nightly': {'job': ..., 'cron': ...}}, got "
                f"{type(raw).__name__} {shown(raw)}",
            )
        ]
    found = []
    for name, entry in raw.items():
        key = schedule_key(name)
        if not isinstance(name, str) or not SCHEDULE_NAME_RE.fullmatch(name):
            found.append(
                (
                    key,
                    "a schedule name is 1 to 200 letters, digits, '_', '.', ':', '-', "
                    "not starting with '.', ':' or '-'",
                )
            )
            continue
        if not isinstance(entry, Mapping):
            found.append(
                (
                    key,
                    "must be a dict with at least 'job' and 'cron', "
                    f"got {type(entry).__name__} {shown(entry)}",
                )
            )
            continue
        missing = {"job", "cron"} - set(entry)
        if missing:
            found.append(
                (
                    key,
                    "must be a dict with at least 'job' and 'cron'; "
                    f"add {' and '.join(repr(m) for m in sorted(missing))}",
                )
            )
            continue
        unknown = set(entry) - SETTINGS_KEYS
        if unknown:
            found.append(
                (
                    key,
                    f"unknown key(s) {', '.join(sorted(map(str, unknown)))}; known: "
                    f"{', '.join(sorted(SETTINGS_KEYS))}",
                )
            )
        if not isinstance(entry["job"], str):
            found.append(
                (
                    key,
                    "'job' must be the name of a registered job, got "
                    f"{type(entry['job']).__name__} {shown(entry['job'])}",
                )
            )
        problem = cron_problem(entry["cron"], entry.get("timezone", "UTC"))
        if problem:
            found.append((key, problem))
        if not isinstance(entry.get("payload", {}), Mapping):
            found.append((key, "'payload' must be a dict of the job's keyword arguments"))
        catch_up = entry.get("catch_up", "latest")
        if not isinstance(catch_up, str) or catch_up not in CATCH_UP_MODES:
            found.append(
                (
                    key,
                    f"'catch_up' must be one of {', '.join(map(repr, CATCH_UP_MODES))}, "
                    f"got {shown(catch_up)}",
                )
            )
    return found


PERIOD_SAMPLE = 64
"""How many consecutive slots ``shortest_period`` looks at."""


def shortest_period(cron: str, timezone: str = "UTC") -> float:
    """The shortest gap in seconds between consecutive slots of a valid
    ``cron``, over its first PERIOD_SAMPLE slots from a fixed date (enough
    for every field pattern short of a yearly one, where it hardly matters)."""
    zone = ZoneInfo(timezone)
    slots = CronSim(cron, datetime(2026, 1, 5, tzinfo=zone))
    previous = next(slots)
    shortest = timedelta.max
    for _ in range(PERIOD_SAMPLE - 1):
        try:
            slot = next(slots)
        except StopIteration:  # pragma: no cover - an expression with few slots
            break
        shortest = min(shortest, slot.astimezone(UTC) - previous.astimezone(UTC))
        previous = slot
    return shortest.total_seconds()
