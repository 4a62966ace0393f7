"""What a worker runs beside its claim loop for schedules and metrics.

``start`` is called once the worker has checked the schema: it switches the
tracing and metrics hooks on or off, syncs the declared schedules, and
starts the schedule sweeper and (with ``QUEUE_METRICS_INTERVAL``) the
queue-depth sampler, on the worker's claim connection. ``Sidecars.stop`` ends both threads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..db import store
from ..db.store import Cursor
from ..operations import metrics
from . import instruments
from .connection import SharedConnection
from .options import WorkerOptions
from .periodic import PeriodicThread
from .scheduler import ScheduleSweeper, sync_at_start

logger = logging.getLogger("django_workhorse.worker")


class DepthSampler(PeriodicThread):
    """Every ``interval`` seconds sets the queue-depth gauge from one count
    of the live rows.

    Every worker with the sampler on samples (docs/observability.md): the
    one-sampler-per-fleet lock this once held for the life of its connection
    is session state, which a transaction-mode pooler hands to whoever gets
    that server connection next, and which the next statement may not even
    meet. The samples agree, so ``max by (queue, state)`` across workers
    reads the fleet's depth."""

    what = "queue depth sampling"

    def __init__(
        self, alias: str, interval: float, connection: SharedConnection | None = None
    ) -> None:
        super().__init__(alias, interval, name="workhorse-metrics", connection=connection)

    def tick(self, cursor: Cursor) -> None:
        metrics.set_depth(store.queue_depth(cursor))


class Sidecars:
    def __init__(self, sweeper: ScheduleSweeper | None, sampler: DepthSampler | None) -> None:
        self.sweeper = sweeper
        self.sampler = sampler

    def stop(self) -> None:
        for thread in (self.sweeper, self.sampler):
            if thread is not None:
                thread.stop()


def start(
    options: WorkerOptions,
    connection: SharedConnection,
    duty: Callable[[], bool] | None = None,
) -> Sidecars:
    """Switch the hooks on or off, sync schedules, start the sweeper and
    sampler, both on ``connection`` (the worker's claim connection).

    A ``--burst`` worker syncs but does not sweep: it runs what is due and exits.
    """
    settings = options.settings
    instruments.configure(settings, options.worker_id)
    sync_at_start(options.alias, settings.schedules, connection)
    sweeper = None
    if not options.burst:
        sweeper = ScheduleSweeper(
            options.alias, settings.schedule_sweep_interval, connection, duty=duty
        )
        sweeper.start()
    sampler = None
    if settings.queue_metrics_interval is not None and metrics.enabled():
        sampler = DepthSampler(options.alias, settings.queue_metrics_interval, connection)
        sampler.start()
    return Sidecars(sweeper, sampler)
