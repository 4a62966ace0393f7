"""Repeatable (cron) schedules: what they are, where they come from, and their slots.

A schedule enqueues one job of a registered type at every slot of a cron
expression. Schedules come from ``@workhorse.job(schedule="*/5 * * * *")``
and from ``WORKHORSE["SCHEDULES"]``; every worker writes them to the
``workhorse_schedule`` table when it starts (``sync``), and the sweep of the
worker that leads the fleet's sweeps enqueues what is due
(``worker/scheduler.py``). The database decides which sweep takes a slot, so
a fleet enqueues one job per slot however many workers sweep.

Cron expressions are read by ``cronsim``: five fields (minute resolution) or
six with seconds first (``*/10 * * * * *``), ``L``, ``LW`` and ``#``, and
cronsim's rules at daylight-saving transitions (see docs/schedules.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast
from zoneinfo import ZoneInfo

from cronsim import CronSim

from ..db import store
from ..db.store import Cursor
from ..exceptions import InvalidJobOptionError
from . import registry
from .cron import ALL_SLOTS_PER_SWEEP, cron_problem, timezone_problem
from .payloads import encode_payload

if TYPE_CHECKING:
    from .definitions import JobDefinition


@dataclass(frozen=True)
class Schedule:
    """One repeatable schedule as declared in code or settings."""

    name: str
    """Unique among the schedules of a database; a job's name for ``@job(schedule=...)``."""
    job_name: str
    """The registered job it enqueues."""
    cron: str
    timezone: str = "UTC"
    """The zone the cron expression is read in (an IANA name)."""
    payload: Mapping[str, Any] = field(default_factory=dict)
    """The keyword arguments of every job it enqueues."""
    catch_up: str = "latest"


def check_job_schedule(job_name: str, cron: Any) -> str:
    """Validate ``@job(schedule=...)``; InvalidJobOptionError names the job."""
    problem = cron_problem(cron, default_timezone())
    if problem:
        raise InvalidJobOptionError(f"job {job_name!r}: schedule: {problem}")
    return cast("str", cron)


def default_timezone() -> str:
    """The zone of ``@job(schedule=...)``: Django's TIME_ZONE (UTC when unset)."""
    from django.conf import settings

    return getattr(settings, "TIME_ZONE", None) or "UTC"


def declared(alias: str, settings_schedules: Mapping[str, Any]) -> list[Schedule]:
    """Every schedule of jobs bound to ``alias``: from the job decorators and
    from settings. ImproperlyConfigured names a settings schedule whose job is
    not registered or whose payload does not fit it or is not JSON."""
    found = job_schedules(alias)
    for name, entry in settings_schedules.items():
        definition, schedule = settings_schedule(name, entry)
        if definition.using != alias:
            continue
        refuse_clash(name, found)
        found[name] = schedule
    return [found[name] for name in sorted(found)]


def refuse_clash(name: str, job_schedules: Mapping[str, Schedule]) -> None:
    """ImproperlyConfigured when a settings schedule takes a ``@job(schedule=...)``'s name."""
    from django.core.exceptions import ImproperlyConfigured

    if name in job_schedules:
        raise ImproperlyConfigured(
            f"WORKHORSE['SCHEDULES'][{name!r}]: job {name!r} already declares a schedule "
            "with @job(schedule=...); give this schedule another name"
        )


def job_schedules(alias: str) -> dict[str, Schedule]:
    """The ``@job(schedule=...)`` schedules of jobs bound to ``alias``, by name."""
    found: dict[str, Schedule] = {}
    for definition in registry.all_jobs().values():
        cron = getattr(definition, "schedule", None)
        if cron and definition.using == alias:
            found[definition.name] = Schedule(
                definition.name, definition.name, cron, default_timezone()
            )
    return found


def settings_schedule(
    name: str, entry: Mapping[str, Any]
) -> tuple[JobDefinition[..., Any], Schedule]:
    """One ``WORKHORSE["SCHEDULES"]`` entry (already shape-checked) and its
    job. ImproperlyConfigured names the schedule when the job is not
    registered, or the payload does not fit its handler or is not JSON (as
    at an enqueue: the payload encoder decides)."""
    from django.core.exceptions import ImproperlyConfigured

    key = f"WORKHORSE['SCHEDULES'][{name!r}]"
    try:
        definition = registry.get(entry["job"])
    except Exception as exc:
        raise ImproperlyConfigured(f"{key}: {exc}") from None
    payload = dict(entry.get("payload", {}))
    try:
        definition.check_payload(payload)
        encode_payload(definition.name, payload)
    except Exception as exc:
        raise ImproperlyConfigured(f"{key}: {exc}") from None
    schedule = Schedule(
        name,
        definition.name,
        entry["cron"],
        entry.get("timezone", "UTC"),
        payload,
        entry.get("catch_up", "latest"),
    )
    return definition, schedule


def sync_json(schedules: list[Schedule]) -> str:
    """The JSON array ``workhorse_schedule_sync_v1`` reads (payloads were
    checked by ``declared``)."""
    rows = []
    for schedule in schedules:
        definition = registry.get(schedule.job_name)
        # The settings' defaults as they are when the worker syncs, as at an enqueue.
        options = definition._options.resolved()
        job_options = definition.stored_policy(options)
        if options.timeout is not None:
            job_options["timeout"] = options.timeout
        rows.append(
            {
                "name": schedule.name,
                "job_name": schedule.job_name,
                # Fields as cronsim splits them: a change of spacing alone is
                # no change of schedule (which would forget the planned slot).
                "cron": " ".join(schedule.cron.split()),
                "timezone": schedule.timezone,
                "payload": dict(schedule.payload),
                "job_options": job_options,
                "catch_up": schedule.catch_up,
            }
        )
    return json.dumps(rows, allow_nan=False, separators=(",", ":"))


def sync(cursor: Cursor, schedules: list[Schedule]) -> dict[str, str]:
    """Make the table hold exactly ``schedules``; what happened to each name."""
    return store.sync_schedules(cursor, sync_json(schedules))


def latest_slot(cron: str, zone: ZoneInfo, now: datetime) -> datetime:
    """The last slot at or before ``now``."""
    return next(CronSim(cron, (now + timedelta(microseconds=1)).astimezone(zone), reverse=True))


def next_slot(cron: str, zone: ZoneInfo, now: datetime) -> datetime:
    """The first slot after ``now``.

    Not always cronsim's first answer: for an expression it reads on the wall
    clock, a start inside a repeated (fall-back) hour yields that hour's
    first occurrence, which is already past."""
    # In UTC: aware datetimes of one zone compare by wall clock, ignoring ``fold``.
    now = now.astimezone(UTC)
    for slot in CronSim(cron, now.astimezone(zone)):
        if slot > now:
            return slot
    raise AssertionError("a cron expression always has a next slot")  # pragma: no cover


def plan(
    cron: str,
    timezone: str,
    catch_up: str,
    next_run_at: datetime | None,
    now: datetime,
) -> tuple[list[datetime], datetime]:
    """The slots to enqueue now, and the next slot to plan, for a schedule whose
    planned slot is ``next_run_at`` (None: not planned yet) at database time ``now``.

    Nothing is enqueued for an unplanned schedule: its first slot is the first
    after ``now`` (later than ``now`` even when ``now`` falls in a repeated
    fall-back hour). A due schedule owes the slots from ``next_run_at`` to
    ``now``: ``latest`` enqueues one job (for the latest of them), ``all`` one
    per slot, up to ALL_SLOTS_PER_SWEEP.
    """
    if problem := timezone_problem(timezone):  # a row written by hand
        raise ValueError(problem)
    zone = ZoneInfo(timezone)
    now = now.astimezone(UTC)  # so that comparisons with slots respect ``fold``
    if next_run_at is None or next_run_at > now:
        return [], next_slot(cron, zone, now)
    if catch_up == "latest":
        slot = max(latest_slot(cron, zone, now), next_run_at)
        return [slot], next_slot(cron, zone, now)
    slots = [next_run_at]
    upcoming = CronSim(cron, next_run_at.astimezone(zone))
    for slot in upcoming:
        if slot.astimezone(UTC) <= slots[-1].astimezone(UTC):
            continue  # the repeated hour's first occurrence, already taken
        if slot > now or len(slots) >= ALL_SLOTS_PER_SWEEP:
            return slots, slot
        slots.append(slot)
    raise AssertionError("a cron expression always has a next slot")  # pragma: no cover
