"""The worker's vacuum turn: the tables with churn stay vacuumed whatever
autovacuum does (docs/worker.md#vacuum).

Every ``VACUUM_INTERVAL`` (the first time after a random part of it, so a
fleet started together does not line up), while its worker leads the
fleet's sweeps (``Liveness.sweeps``, docs/worker.md#the-fleets-sweeps), the
thread asks
``workhorse_vacuum_due_v1`` which tables have more dead tuples than the
threshold and nobody vacuumed within the interval, and runs ``VACUUM`` on
each, one statement at a time: VACUUM cannot run inside a function or a
transaction, so it is the one statement this thread sends itself (through
``store``). A table this worker's role may not vacuum is named once at INFO
and left to autovacuum. A database error is logged and the next turn tries
again.

One worker at a time vacuums a table without any lock of ours: a VACUUM
holds the table's SHARE UPDATE EXCLUSIVE lock, which conflicts with itself,
and ``SKIP_LOCKED`` makes a second worker's VACUUM of it skip at once (and
the next turn finds it vacuumed within the interval). A session advisory
lock held across the turn's statements, as this once took, cannot work
behind a transaction-mode pooler: each statement may run on another server
connection, and the lock would stay on whichever took it.

The turn runs on the worker's claim connection, a statement at a time
(``periodic.TurnCursor``): while a VACUUM runs, this worker's claims wait
for it; its lease renewals do not (they have the lease connection).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable

import psycopg

from ..db import store
from ..db.store import Cursor, VacuumCandidate
from .connection import SharedConnection
from .periodic import PeriodicThread

logger = logging.getLogger("django_workhorse.worker")

LOCK_NOT_AVAILABLE = psycopg.errors.LockNotAvailable.sqlstate
"""The state of the warning of a VACUUM (SKIP_LOCKED) that found its table locked."""


class VacuumSweeper(PeriodicThread):
    """Vacuums the tables with churn that are due, every ``interval`` seconds,
    one worker of the fleet at a time."""

    what = "vacuum"

    def __init__(
        self,
        alias: str,
        interval: float,
        connection: SharedConnection | None = None,
        duty: Callable[[], bool] | None = None,
    ) -> None:
        super().__init__(alias, interval, name="workhorse-vacuum", connection=connection, duty=duty)
        self._told: set[str] = set()
        """Tables this role may not vacuum that have been logged already."""

    def first_wait(self) -> float:
        return random.uniform(0.0, self.interval)

    def tick(self, cursor: Cursor) -> None:
        candidates = store.vacuum_due(cursor, self.interval)
        self._tell_unowned(cursor, candidates)
        if not any(c.due and c.may_vacuum for c in candidates):
            logger.debug("workhorse vacuum: no table this role may vacuum is due")
            return
        for candidate in candidates:
            if candidate.due and candidate.may_vacuum:
                self._vacuum(cursor, candidate)

    def _vacuum(self, cursor: Cursor, candidate: VacuumCandidate) -> None:
        started = time.monotonic()
        warnings = store.vacuum_table(cursor, candidate.table)
        took = time.monotonic() - started
        if any(state == LOCK_NOT_AVAILABLE for state, _ in warnings):
            logger.info(
                "workhorse vacuum: %s is locked by another session (another worker's or "
                "autovacuum's VACUUM, a migration); it is left for the next turn",
                candidate.table,
            )
        else:
            logger.info(
                "workhorse vacuum: vacuumed %s (%s dead of %s tuples) in %.2f s",
                candidate.table,
                candidate.dead_tuples,
                candidate.dead_tuples + candidate.live_tuples,
                took,
            )
        for state, message in warnings:
            if state != LOCK_NOT_AVAILABLE:
                logger.warning("workhorse vacuum of %s: %s", candidate.table, message)

    def _tell_unowned(self, cursor: Cursor, candidates: list[VacuumCandidate]) -> None:
        """Say once per table that this role cannot vacuum it; then stay quiet."""
        unowned = [c.table for c in candidates if not c.may_vacuum and c.table not in self._told]
        if not unowned:
            return
        self._told.update(unowned)
        logger.info(
            "workhorse vacuum: role %r may not VACUUM %s (only the table's owner, the "
            "database's owner or, from PostgreSQL 17, a role with MAINTAIN on it may); "
            "autovacuum must look after %s",
            cursor.connection.info.user,
            ", ".join(unowned),
            "it" if len(unowned) == 1 else "them",
        )


def start_vacuum(
    alias: str,
    interval: float | None,
    connection: SharedConnection | None = None,
    duty: Callable[[], bool] | None = None,
) -> VacuumSweeper | None:
    """Start the vacuum turns, or None when ``VACUUM_INTERVAL`` is None."""
    if interval is None:
        logger.info(
            "workhorse vacuum: off (VACUUM_INTERVAL is None); autovacuum must look after "
            "the tables with churn"
        )
        return None
    sweeper = VacuumSweeper(alias, interval, connection, duty=duty)
    sweeper.start()
    return sweeper
