"""The schedule sweeper: syncs the schedules at worker start, then enqueues what is due.

Every worker but a ``--burst`` one runs one, on its claim connection, and
sweeps only while it leads the fleet's sweeps (``Liveness.sweeps``: its
pulse says so, or it has no pulse of its own; docs/worker.md#the-fleets-sweeps).
Which sweep takes a slot is the database's decision
(``workhorse_schedule_fire_v1`` moves the schedule on with a compare-and-set,
and each slot's job carries an idempotency key), so any number of workers
may sweep at once: the losers simply get no rows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import psycopg

from ..core import schedules
from ..db import store
from ..db.store import Cursor
from .connection import SharedConnection
from .logs import job_extra
from .periodic import PeriodicThread

logger = logging.getLogger("django_workhorse.worker")


def sync_at_start(
    alias: str, settings_schedules: Mapping[str, Mapping[str, Any]], shared: SharedConnection
) -> None:
    """Write the declared schedules to the table (one transaction, serialised
    with other workers' syncs by the SQL function)."""
    declared = schedules.declared(alias, settings_schedules)
    with shared.use() as conn, conn.transaction(), conn.cursor() as cursor:
        actions = schedules.sync(cursor, declared)
    changed = {name: action for name, action in actions.items() if action != "unchanged"}
    if changed:
        logger.info(
            "workhorse schedules: %s",
            ", ".join(f"{name} {action}" for name, action in sorted(changed.items())),
        )


def plan(due: store.DueSchedule) -> tuple[list[datetime], datetime] | str:
    """The slots to enqueue and the next slot of a due schedule, or why its
    row cannot be read (a time Python cannot load, a cron or zone written by
    hand)."""
    if due.unreadable:
        return f"its row cannot be read: {due.unreadable}"
    try:
        return schedules.plan(due.cron, due.timezone, due.catch_up, due.next_run_at, due.db_now)
    except OverflowError:
        # Only a planned slot in the first hours of the year 1 (UTC), which
        # workhorse_schedule_fire_v1 takes, lies outside the calendar of a
        # zone west of UTC; catch_up="all" counts the slots on from it.
        return (
            f"it cannot be planned: its next_run_at {due.next_run_at} falls before the year 1 "
            f"in its time zone {due.timezone}; set it to NULL (the next sweep plans the first "
            "slot after now) or to a later time"
        )
    except Exception as exc:
        return f"it cannot be planned: {exc}"


def sweep(cursor: Cursor, reported: dict[str, str] | None = None) -> int:
    """One sweep: enqueue the due slots of every running schedule; the jobs
    this call inserted.

    A schedule that cannot be planned or enqueued is logged and left as it
    is (the next sweep tries it again, and reports it again only when its
    problem changes); the others go on. Each fire is one
    statement, so on the worker's autocommit connection a failed one leaves
    nothing behind. A lost connection is raised: the sweeper reconnects.

    A row this code cannot read (a next_run_at outside the years Python
    loads, a cron or zone written by hand) is skipped and reported once per
    ``reported``, which maps such a schedule's name to what was reported;
    it is reported again when its problem changes or comes back after a fix."""
    inserted = 0
    unread: dict[str, str] = {}
    for due in store.due_schedules(cursor):
        planned = plan(due)
        if isinstance(planned, str):
            unread[due.name] = planned
            if reported is None or reported.get(due.name) != planned:
                logger.error(
                    "workhorse: schedule %r is skipped, %s; the other schedules go on",
                    due.name,
                    planned,
                )
            continue
        slots, upcoming = planned
        try:
            fired = store.fire_schedule(cursor, due.name, due.next_run_at, slots, upcoming)
        except (psycopg.OperationalError, psycopg.InterfaceError):
            raise
        except Exception as exc:
            first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            problem = f"could not enqueue its job ({first_line})"
            unread[due.name] = problem
            if reported is None or reported.get(due.name) != problem:
                logger.error(
                    "workhorse: schedule %r %s; the other schedules go on and the next sweep "
                    "tries it again. Fix the job's options in its definition and restart the "
                    "workers, or correct the schedule's row in workhorse_schedule",
                    due.name,
                    problem,
                )
            continue
        for slot, job_id, new in fired:
            if new:
                inserted += 1
                logger.info(
                    "workhorse schedule %s: enqueued job #%s for %s",
                    due.name,
                    job_id,
                    slot.isoformat(),
                    extra=job_extra(job_id, due.queue, None, due.job_name),
                )
    if reported is not None:
        reported.clear()
        reported.update(unread)
    return inserted


class ScheduleSweeper(PeriodicThread):
    """Sweeps every ``interval`` seconds until ``stop()``; a database error
    is logged and the next sweep reconnects."""

    what = "schedule sweep"

    def __init__(
        self,
        alias: str,
        interval: float,
        connection: SharedConnection | None = None,
        duty: Callable[[], bool] | None = None,
    ) -> None:
        super().__init__(
            alias, interval, name="workhorse-schedules", connection=connection, duty=duty
        )
        self.reported: dict[str, str] = {}
        """The schedules skipped as unreadable or not enqueued, reported once each."""

    def tick(self, cursor: Cursor) -> None:
        sweep(cursor, self.reported)
