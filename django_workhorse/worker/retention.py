"""The worker's periodic retention run (see ``django_workhorse.retention``).

A thread with its own autocommit connection wakes every
``RETENTION["INTERVAL"]`` (the first time after a random part of it, so a
fleet started together does not line up) and prunes. Every worker runs it;
the advisory lock in ``workhorse_prune_v1`` lets one at a time do the work
and the others skip their turn. A database error is logged and the next turn
tries again: retention is never urgent.
"""

from __future__ import annotations

import logging
import random

from .. import retention
from ..conf import RetentionSettings, get_retention
from ..store import Cursor
from .periodic import PeriodicThread

logger = logging.getLogger("django_workhorse.worker")

MAX_STEPS_PER_TURN = 100
"""Batches one turn may delete; the rest waits for the next turn."""


class RetentionSweeper(PeriodicThread):
    """Prunes every ``settings.interval`` seconds until stopped."""

    what = "retention"

    def __init__(self, *, alias: str, settings: RetentionSettings) -> None:
        super().__init__(alias, settings.interval or 0.0, name="workhorse-retention")
        self.settings = settings

    def first_wait(self) -> float:
        return random.uniform(0.0, self.interval)

    def tick(self, cursor: Cursor) -> None:
        report = retention.prune(cursor, settings=self.settings, max_steps=MAX_STEPS_PER_TURN)
        if report.did_anything:
            logger.info("workhorse retention: %s", "; ".join(report.lines()))


def start_retention(alias: str) -> RetentionSweeper | None:
    """Start the sweeper, or None when ``RETENTION["INTERVAL"]`` is None."""
    settings = get_retention()
    if settings.interval is None:
        return None
    sweeper = RetentionSweeper(alias=alias, settings=settings)
    sweeper.start()
    return sweeper
