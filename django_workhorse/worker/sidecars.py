"""What a worker runs beside its claim loop for schedules and metrics.

``start`` is called once the worker has checked the schema: it switches the
tracing and metrics hooks on or off, syncs the declared schedules, and
starts the schedule sweeper and (with ``QUEUE_METRICS_INTERVAL``) the
queue-depth sampler. ``Sidecars.stop`` ends both threads.
"""

from __future__ import annotations

import logging

import psycopg

from .. import metrics, store
from ..store import Cursor
from . import instruments
from .options import WorkerOptions
from .periodic import PeriodicThread
from .scheduler import ScheduleSweeper, sync_at_start

logger = logging.getLogger("django_workhorse.worker")


class DepthSampler(PeriodicThread):
    """Every ``interval`` seconds, if this worker holds the sampler's advisory
    lock (taken when free, kept for the life of the connection), sets the
    queue-depth gauge. The other workers of the fleet retry the lock at each
    interval, so one takes over when the holder stops or dies."""

    what = "queue depth sampling"

    def __init__(self, alias: str, interval: float) -> None:
        super().__init__(alias, interval, name="workhorse-metrics")
        self.holder = False

    def tick(self, cursor: Cursor) -> None:
        if not self.holder:
            self.holder = store.try_depth_sampler_lock(cursor)
        if self.holder:
            metrics.set_depth(store.queue_depth(cursor))

    def closed(self) -> None:
        if self.holder:
            # The lock went with the connection: another worker may take it
            # before this one reconnects, and a fleet's gauge is the holder's.
            self.holder = False
            metrics.drop_depth()


class Sidecars:
    def __init__(self, sweeper: ScheduleSweeper | None, sampler: DepthSampler | None) -> None:
        self.sweeper = sweeper
        self.sampler = sampler

    def stop(self) -> None:
        for thread in (self.sweeper, self.sampler):
            if thread is not None:
                thread.stop()


def start(options: WorkerOptions, conn: psycopg.Connection) -> Sidecars:
    """Switch the hooks on or off, sync schedules, start the sweeper and sampler.

    A ``--burst`` worker syncs but does not sweep: it runs what is due and exits.
    """
    settings = options.settings
    instruments.configure(settings, options.worker_id)
    sync_at_start(options.alias, settings.schedules, conn)
    sweeper = None
    if not options.burst:
        sweeper = ScheduleSweeper(options.alias, settings.schedule_sweep_interval)
        sweeper.start()
    sampler = None
    if settings.queue_metrics_interval is not None and metrics.enabled():
        sampler = DepthSampler(options.alias, settings.queue_metrics_interval)
        sampler.start()
    return Sidecars(sweeper, sampler)
