"""The heartbeat thread: renews every in-flight lease in one call, delivers
cancel requests, and runs the periodic sweeps (stall recovery, partitions).

It works on the worker's lease connection, never the claim connection, so
that a slow claim (or a sweep, a checkpoint, a VACUUM: all on the claim
connection) never delays a renewal: a late renewal is what makes another
worker take a job that is still running. The one other user of the lease
connection is the writer, whose batches are short single transactions;
a renewal waits at most for the one under way (docs/worker.md#connections).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg

from ..db import store
from .connection import SharedConnection, connect, retry_delays

logger = logging.getLogger("django_workhorse.worker")

PARTITION_SWEEP_INTERVAL = 3600.0


class Heartbeat(threading.Thread):
    """Renews leases every ``renew_interval``; sweeps every ``stalled_interval``.

    ``in_flight`` gives (owner, job id, fence) of the leases to renew;
    ``on_lost`` and ``on_cancel`` (job id, fence, owner) get
    the answers. Every field but the
    events is used by the heartbeat's thread only.
    """

    def __init__(
        self,
        *,
        alias: str,
        lease_seconds: float,
        renew_interval: float,
        stalled_interval: float,
        partition_days_ahead: int,
        in_flight: Callable[[], list[tuple[str, int, int]]],
        on_lost: Callable[[int, int, str], None],
        on_cancel: Callable[[int, int, str], None],
        on_recovered: Callable[[list[store.Recovered]], None],
        describe: Callable[[], dict[str, Any]] | None = None,
        connection: SharedConnection | None = None,
        on_renewed: Callable[[int, int, str, float], None] | None = None,
        take_unowned: Callable[[], list[tuple[str, int, int]]] | None = None,
        sweeps: Callable[[], bool] | None = None,
    ) -> None:
        super().__init__(name="workhorse-heartbeat", daemon=True)
        self.alias = alias
        self.lease_seconds = lease_seconds
        self.renew_interval = renew_interval
        self.stalled_interval = stalled_interval
        self.partition_days_ahead = partition_days_ahead
        self.in_flight = in_flight
        self.on_lost = on_lost
        self.on_cancel = on_cancel
        self.on_recovered = on_recovered
        self.on_renewed = on_renewed
        """(job id, fence, owner, sent): a lease renewed by a call that set
        out at ``sent`` (monotonic); the worker's liveness reckons from it."""
        self.sweeps = sweeps
        """Whether this worker does the fleet's stall sweep now
        (``Liveness.sweeps``); None: always. The first sweep, at start, is
        every worker's own."""
        self.take_unowned = take_unowned
        """(owner, job id, fence) of the runs the worker stopped because it
        could not prove it owned them: released at the next renewal turn."""
        self.describe = describe
        """What the worker says of itself (worker_id, host, pid, queues, ...):
        sent with each renewal turn's call (while idle, once a minute:
        ``presence.describe_every``), so the workers view (the
        workhorse_worker row) costs no call of its own."""
        self._unreleased: list[tuple[str, int, int]] = []
        self._described: str | None = None
        self._described_at = 0.0
        self.stop_event = threading.Event()
        self.kick = threading.Event()
        self.swept = threading.Event()
        """Set once the first stall sweep has run: a burst worker ends only
        after a claim that came later, so it also runs what that sweep
        recovered (jobs whose lease expired while no worker ran)."""
        self.on_swept: Callable[[], None] = lambda: None
        """Called once, after that first sweep (the worker wakes its loop)."""
        self._owns_connection = connection is None
        self._shared = connection or SharedConnection(
            lambda: connect(alias, application_name="workhorse-heartbeat")
        )

    def stop(self) -> None:
        self.stop_event.set()
        self.kick.set()

    def run(self) -> None:
        now = time.monotonic()
        # A worker that describes itself says so at once: the workers view
        # lists it from its start, not a renew interval later.
        next_renew = now if self.describe is not None else now + self.renew_interval
        next_recover = now  # sweep once at start: a restarted fleet recovers at once
        next_partitions = now + PARTITION_SWEEP_INTERVAL
        delays: Iterator[float] | None = None  # set while the database fails
        while not self.stop_event.is_set():
            now = time.monotonic()
            try:
                if now >= next_renew or self.kick.is_set():
                    self.kick.clear()
                    next_renew = now + self.renew_interval
                    self.renew()
                if now >= next_recover:
                    next_recover = now + self.stalled_interval
                    self.recover()
                if now >= next_partitions:
                    next_partitions = now + PARTITION_SWEEP_INTERVAL
                    with self.cursor() as cursor:
                        store.ensure_partitions(cursor, self.partition_days_ahead)
                delays = None
            except psycopg.Error as exc:
                # One warning per outage; the tries after it at DEBUG.
                log = logger.warning if delays is None else logger.debug
                log("workhorse heartbeat: database error, reconnecting: %s", exc)
                self._shared.close()
                if delays is None:
                    delays = retry_delays()
                # A renewal that failed is tried again on a new connection
                # soon, not at the next turn: with the default renew interval
                # (half the lease) that turn comes as the lease runs out, and
                # any worker's stall sweep would take the job from its
                # running handler.
                next_renew = min(next_renew, time.monotonic() + next(delays))
            wait = min(next_renew, next_recover, next_partitions) - time.monotonic()
            self.kick.wait(max(0.0, wait))
        self.say_gone()
        if self._owns_connection:
            self._shared.close()

    def say_gone(self) -> None:
        """A stopping worker leaves the workers view at once (one that dies
        stays there as not seen since its last heartbeat)."""
        if self.describe is None:
            return
        with contextlib.suppress(psycopg.Error), self.cursor() as cursor:
            store.worker_gone(cursor, self.describe()["worker_id"])

        if self._owns_connection:
            self._shared.close()

    def cursor(self) -> contextlib.AbstractContextManager[psycopg.Cursor]:
        """A cursor on the lease connection, held for the block."""
        return self._shared.cursor()

    def renew(self) -> None:
        """Renew every lease ``in_flight`` names: one call per owner name
        (almost always one; see ``claims.py``)."""
        if self.take_unowned is not None:
            unowned = self.take_unowned()
            if unowned or self._unreleased:
                self.release_unowned(unowned)
        by_owner: dict[str, list[tuple[int, int]]] = {}
        for owner, job_id, fence in self.in_flight():
            by_owner.setdefault(owner, []).append((job_id, fence))
        # The worker's description rides on the turn's first call; an idle
        # worker makes that call with no leases, as often as it says it will.
        described = self.describe() if self.describe is not None else None
        info = json.dumps(described) if described is not None else None
        if not by_owner and described is not None and info is not None:
            # With nothing to renew, the call is for the workers view alone:
            # made when what the worker says changed, else as often as it
            # says it will (``renew_interval``: a minute while idle).
            now = time.monotonic()
            every = float(described.get("renew_interval") or self.renew_interval)
            if info == self._described and now < self._described_at + every - 0.5:
                return
            with self.cursor() as cursor:
                store.heartbeat_many(cursor, "", [], [], self.lease_seconds, info)
            self._described, self._described_at = info, now
            return
        for owner, leases in by_owner.items():
            ids, fences = zip(*leases, strict=True)
            with self.cursor() as cursor:
                sent = time.monotonic()
                rows = store.heartbeat_many(cursor, owner, ids, fences, self.lease_seconds, info)
            if info is not None:
                self._described, self._described_at = info, sent
            info = None
            # Rows come back in input order: each answers the fence that was sent.
            for (job_id, renewed, cancel_requested), fence in zip(rows, fences, strict=True):
                if not renewed:
                    self.on_lost(job_id, fence, owner)
                    continue
                if self.on_renewed is not None:
                    self.on_renewed(job_id, fence, owner, sent)
                if cancel_requested:
                    self.on_cancel(job_id, fence, owner)

    def release_unowned(self, unowned: list[tuple[str, int, int]]) -> None:
        """Put back to ready the jobs of runs the worker stopped unproven,
        unless another run took them meanwhile (the fence decides); no
        attempt is used. What a database error leaves is tried at the next
        turn."""
        pending = self._unreleased + unowned
        self._unreleased = []
        released = 0
        while pending:
            owner = pending[0][0]
            runs = [(j, f) for o, j, f in pending if o == owner]
            try:
                with self.cursor() as cursor:
                    ids, fences = zip(*runs, strict=True)
                    rows = store.release_many(cursor, owner, ids, fences)
            except psycopg.Error:
                self._unreleased = pending
                raise
            released += sum(1 for _, ok, _ in rows if ok)
            pending = [p for p in pending if p[0] != owner]
        if released:
            logger.warning(
                "workhorse: released %s job(s) whose runs this worker stopped while it could "
                "not prove it owned them; they are ready again (no attempt used)",
                released,
            )

    def recover(self) -> None:
        if self.swept.is_set() and self.sweeps is not None and not self.sweeps():
            return
        with self.cursor() as cursor:
            recovered = store.recover_stalled(cursor)
        if recovered:
            self.on_recovered(recovered)
        if not self.swept.is_set():
            self.swept.set()
            self.on_swept()

    def _close(self) -> None:
        """Close the lease connection (a test's heartbeat, driven by hand)."""
        self._shared.close()
