"""The schedule sweeper: syncs the schedules at worker start, then enqueues what is due.

Every worker runs one, on its own connection. Which sweep takes a slot is the
database's decision (``workhorse_schedule_fire_v1`` moves the schedule on with
a compare-and-set, and each slot's job carries an idempotency key), so any
number of workers may sweep at once: the losers simply get no rows.
"""

from __future__ import annotations

import contextlib
import logging
import threading

import psycopg

from .. import schedules, store
from .connection import connect

logger = logging.getLogger("django_workhorse.worker")


def sync_at_start(alias: str, settings_schedules, conn: psycopg.Connection) -> None:
    """Write the declared schedules to the table (one transaction, serialised
    with other workers' syncs by the SQL function)."""
    declared = schedules.declared(alias, settings_schedules)
    with conn.transaction(), conn.cursor() as cursor:
        actions = schedules.sync(cursor, declared)
    changed = {name: action for name, action in actions.items() if action != "unchanged"}
    if changed:
        logger.info(
            "workhorse schedules: %s",
            ", ".join(f"{name} {action}" for name, action in sorted(changed.items())),
        )


def sweep(cursor) -> int:
    """One sweep: enqueue the due slots of every running schedule; the jobs
    this call inserted."""
    inserted = 0
    for due in store.due_schedules(cursor):
        try:
            slots, upcoming = schedules.plan(
                due.cron, due.timezone, due.catch_up, due.next_run_at, due.db_now
            )
        except Exception as exc:  # a row written by hand with a bad cron or zone
            logger.error("workhorse: schedule %r cannot be planned: %s", due.name, exc)
            continue
        for slot, job_id, new in store.fire_schedule(
            cursor, due.name, due.next_run_at, slots, upcoming
        ):
            if new:
                inserted += 1
                logger.info(
                    "workhorse schedule %s: enqueued job #%s for %s",
                    due.name,
                    job_id,
                    slot.isoformat(),
                )
    return inserted


class ScheduleSweeper(threading.Thread):
    """Sweeps every ``interval`` seconds until ``stop()``; a database error
    is logged and the next sweep reconnects."""

    def __init__(self, alias: str, interval: float) -> None:
        super().__init__(name="workhorse-schedules", daemon=True)
        self.alias = alias
        self.interval = interval
        self._stopping = threading.Event()
        self._conn: psycopg.Connection | None = None

    def run(self) -> None:
        while not self._stopping.is_set():
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = connect(self.alias, application_name="workhorse-schedules")
                with self._conn.cursor() as cursor:
                    sweep(cursor)
            except psycopg.Error as exc:
                logger.warning("workhorse: schedule sweep failed (%s); retrying", exc)
                self._close()
            self._stopping.wait(self.interval)
        self._close()

    def _close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None

    def stop(self) -> None:
        self._stopping.set()
        if self.is_alive():
            self.join(5.0)
