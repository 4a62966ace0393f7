"""The worker's periodic retention run (see ``django_workhorse.operations.retention``).

A thread on the worker's claim connection (a statement at a time,
``periodic.TurnCursor``: claims go on between the steps) wakes every
``RETENTION["INTERVAL"]`` (the first time after a random part of it, so a
fleet started together does not line up) and prunes. Every worker runs it;
the advisory lock in ``workhorse_prune_v1`` lets one at a time do the work
and the others skip their turn. A database error is logged and the next turn
tries again: retention is never urgent.
"""

from __future__ import annotations

import logging
import random

from ..core.conf import RetentionSettings, get_retention
from ..db.store import Cursor
from ..operations import retention
from .connection import SharedConnection
from .periodic import PeriodicThread

logger = logging.getLogger("django_workhorse.worker")

MAX_STEPS_PER_TURN = 100
"""Batches one turn may delete. A turn that stops there with more past the
window says so and the next turn follows at once (after CATCH_UP_PAUSE), so
retention keeps up with any throughput while each turn stays bounded."""

CATCH_UP_PAUSE = 1.0
"""Seconds between turns while retention is behind."""


class RetentionSweeper(PeriodicThread):
    """Prunes every ``settings.interval`` seconds until stopped."""

    what = "retention"

    def __init__(
        self,
        *,
        alias: str,
        settings: RetentionSettings,
        connection: SharedConnection | None = None,
    ) -> None:
        super().__init__(
            alias, settings.interval or 0.0, name="workhorse-retention", connection=connection
        )
        self.settings = settings

    def first_wait(self) -> float:
        return random.uniform(0.0, self.interval)

    def tick(self, cursor: Cursor) -> float | None:
        report = retention.prune(cursor, settings=self.settings, max_steps=MAX_STEPS_PER_TURN)
        if report.did_anything:
            logger.info("workhorse retention: %s", "; ".join(report.lines()))
        if not report.complete:
            logger.warning(
                "workhorse retention: a turn of %s steps left more past the window; "
                "the next turn follows in %s s instead of %s s (raise "
                "RETENTION['BATCH_SIZE'] if this repeats)",
                report.steps,
                CATCH_UP_PAUSE,
                self.interval,
            )
            return CATCH_UP_PAUSE
        return None


def start_retention(
    alias: str, connection: SharedConnection | None = None
) -> RetentionSweeper | None:
    """Start the sweeper, or None when ``RETENTION["INTERVAL"]`` is None."""
    settings = get_retention()
    if settings.interval is None:
        return None
    sweeper = RetentionSweeper(alias=alias, settings=settings, connection=connection)
    sweeper.start()
    return sweeper
