"""The worker's periodic retention run (see ``django_workhorse.retention``).

A thread with its own autocommit connection wakes every
``RETENTION["INTERVAL"]`` (the first time after a random part of it, so a
fleet started together does not line up) and prunes. Every worker runs it;
the advisory lock in ``workhorse_prune_v1`` lets one at a time do the work
and the others skip their turn. A database error is logged and the next turn
tries again: retention is never urgent.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading

import psycopg

from .. import retention
from ..conf import RetentionSettings, get_retention
from .connection import connect

logger = logging.getLogger("django_workhorse.worker")

MAX_STEPS_PER_TURN = 100
"""Batches one turn may delete; the rest waits for the next turn."""


class RetentionSweeper(threading.Thread):
    """Prunes every ``settings.interval`` seconds until stopped."""

    def __init__(self, *, alias: str, settings: RetentionSettings) -> None:
        super().__init__(name="workhorse-retention", daemon=True)
        self.alias = alias
        self.settings = settings
        self.stop_event = threading.Event()
        self._conn: psycopg.Connection | None = None

    def stop(self) -> None:
        self.stop_event.set()

    def run(self) -> None:
        interval = self.settings.interval or 0.0
        wait = random.uniform(0.0, interval)
        while not self.stop_event.wait(wait):
            wait = interval
            try:
                self.turn()
            except psycopg.Error as exc:
                logger.warning("workhorse retention: database error (%s); next turn retries", exc)
                self._close()
        self._close()

    def turn(self) -> retention.PruneReport:
        if self._conn is None or self._conn.closed:
            self._conn = connect(self.alias, application_name="workhorse-retention")
        with self._conn.cursor() as cursor:
            report = retention.prune(cursor, settings=self.settings, max_steps=MAX_STEPS_PER_TURN)
        if report.did_anything:
            logger.info("workhorse retention: %s", "; ".join(report.lines()))
        return report

    def _close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None


def start_retention(alias: str) -> RetentionSweeper | None:
    """Start the sweeper, or None when ``RETENTION["INTERVAL"]`` is None."""
    settings = get_retention()
    if settings.interval is None:
        return None
    sweeper = RetentionSweeper(alias=alias, settings=settings)
    sweeper.start()
    return sweeper
