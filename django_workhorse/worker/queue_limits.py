"""Queue limits from ``WORKHORSE['QUEUES']``, written at worker start.

The limits live in ``workhorse_queue`` and the claim enforces them for every
worker. A worker that starts with limits named in ``QUEUES[name]`` for a queue
it serves writes them (a missing key is no limit), so settings and database
agree after a deploy; a queue whose entry names no limit keeps what
``Admin().set_queue_limits`` set.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from ..core.conf import QUEUE_LIMIT_KEYS, WorkhorseSettings, duration_seconds
from ..db import store
from ..db.store import Cursor

logger = logging.getLogger("django_workhorse.worker")


def configured(settings: WorkhorseSettings, queues: Iterable[str]) -> dict[str, tuple[Any, ...]]:
    """(concurrency, rate, period seconds) per served queue whose settings name limits."""
    found = {}
    for name in queues:
        options = settings.queues.get(name, {})
        if not any(key in options for key in QUEUE_LIMIT_KEYS):
            continue
        period = options.get("period")
        found[name] = (
            options.get("global_concurrency"),
            options.get("rate"),
            duration_seconds(period) if period is not None else None,
        )
    return found


def sync(cursor: Cursor, settings: WorkhorseSettings, queues: Iterable[str]) -> None:
    """Write the configured limits of ``queues``; log the ones that changed."""
    for name, (concurrency, rate, period) in configured(settings, queues).items():
        result = store.set_queue_limits(cursor, name, concurrency, rate, period)
        if result.status == "changed":
            logger.info(
                "workhorse: queue %s limits set from settings: concurrency %s, rate %s",
                name,
                concurrency if concurrency is not None else "unlimited",
                f"{rate} per {period:g} s" if rate is not None else "unlimited",
            )
