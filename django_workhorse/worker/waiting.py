"""What a starting worker says of jobs it will not run: once, at start.

A worker serves the queues it was given (or those it knows at start); ready
jobs on a queue that neither it nor any other live worker serves would wait
with no message anywhere, so it names them, with the served queues that look
like each (a mistyped ``.options(queue=...)``), and says how to serve them.
"""

from __future__ import annotations

import logging
from typing import Any

from ..db import store
from ..operations.unserved import close_matches, served_by_rows, unserved_ready
from .options import WorkerOptions

logger = logging.getLogger("django_workhorse.worker")

WORKERS_SEEN_WITHIN = 3600.0
"""The registry rows read: those of workers seen in the last hour (the
silent ones among them serve nothing)."""


def say_what_waits(cursor: Any, options: WorkerOptions) -> None:
    """Log the worker's start notes (``WorkerOptions.notes``), then one
    warning naming the queues whose ready jobs no live worker, this one
    included, serves."""
    for note in options.notes:
        logger.warning("workhorse: %s", note)
    own = set(options.queues)
    waiting = unserved_ready(store.queue_depth(cursor), own)
    if not waiting:
        return
    others = served_by_rows(store.list_workers(cursor, WORKERS_SEEN_WITHIN))
    waiting = {queue: jobs for queue, jobs in waiting.items() if queue not in others}
    if not waiting:
        return
    served = own | others
    described = []
    for queue, jobs in waiting.items():
        close = close_matches(queue, served)
        like = f", like {' and '.join(repr(c) for c in close)}" if close else ""
        described.append(f"{queue!r} ({jobs} ready{like})")
    logger.warning(
        "workhorse: ready jobs wait on queue(s) that no live worker serves: %s. This worker "
        "serves %s. Serve them with runworker --queues (or name them in WORKHORSE['QUEUES'], "
        "which every worker started without --queues serves); a mistyped queue's jobs can be "
        "canceled and enqueued again on the right one",
        "; ".join(described),
        ", ".join(options.queues),
    )
