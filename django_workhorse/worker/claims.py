"""The claim loop's connection, and the owner name its claims are made under.

Claims commit without waiting for their WAL flush (docs/decisions.md). A
server crash can therefore lose a claim this worker already acted on: the
job is ready again with its old fence, and the next claim of it, by this very
worker, would get the same fence again. The owner name makes that pair new:
each connection of the claim loop claims under a name of its own (the worker
id, then ``<worker id>+1``, ``+2``, ... after each reconnect). A crash always
ends the connection a lost claim was made on, so no (owner, fence) pair is
ever handed out twice, and every write of a run presents the pair its claim
returned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import psycopg

from ..db import store
from . import instruments
from .connection import SharedConnection


class ClaimSession:
    """The claim connection, used by one claiming thread at a time (the
    worker's claim lock) and shared with the worker's other short work
    (look-ups, checkpoints, the periodic sweeps: ``shared``), one use at a
    time. Its claims share one cursor, which keeps the loaders of the
    claim's columns from one call to the next: one-job calls took 95 to 115
    µs of client CPU on it against 120 to 170 µs with a cursor per call
    (docs/decisions.md). Whoever opens a new connection on it (a reconnect
    after an error, from any thread) gives the claims a new owner name."""

    def __init__(self, worker_id: str, connect: Callable[[], psycopg.Connection]) -> None:
        self.worker_id = worker_id
        self.shared = SharedConnection(connect)
        self._cursor: psycopg.Cursor | None = None

    @property
    def owner(self) -> str:
        """The owner name of the claims made on the current connection."""
        opened = max(self.shared.opened, 1)
        return self.worker_id if opened == 1 else f"{self.worker_id}+{opened - 1}"

    @property
    def conn(self) -> psycopg.Connection | None:
        return self.shared.conn

    def open(self) -> psycopg.Connection:
        """A new connection, and with it a new owner name for its claims."""
        return self.shared.open()

    def close(self, *, wait: bool = True) -> None:
        self.shared.close(wait=wait)

    def _claim_cursor(self) -> psycopg.Cursor:
        """The claim cursor on the ready connection; the caller holds
        ``shared.lock`` (one ``with`` on the hot path, not two context
        managers: a one-slot worker makes this call once per job)."""
        conn = self.shared.ready()
        cursor = self._cursor
        if cursor is None or cursor.connection is not conn:
            cursor = self._cursor = conn.cursor()
        return cursor

    def claim(
        self, queues: Sequence[str], limits: Sequence[int], lease_seconds: float
    ) -> tuple[str, list[store.ClaimedJob]]:
        """Claim up to ``limits[i]`` jobs of ``queues[i]``; the owner name
        they were claimed under, and the jobs. The claim commits without
        waiting for its WAL flush, in its own transaction only (see the
        module's docstring)."""
        with self.shared.lock:
            cursor = self._claim_cursor()
            owner = self.owner
            jobs = store.claim_many(cursor, owner, queues, limits, lease_seconds, flush=False)
        instruments.observe_claimed(jobs)
        return owner, jobs

    def succeed_and_claim(
        self,
        owner: str,
        job_ids: Sequence[int],
        fences: Sequence[int],
        results_json: Sequence[str],
        queues: Sequence[str],
        limits: Sequence[int],
        lease_seconds: float,
    ) -> tuple[list[tuple[int, bool]], list[store.ClaimedJob]]:
        """Record successes of runs claimed under the current owner name,
        then claim as ``claim`` does, in one call (see ``store``); its commit
        waits for the flush, as every finish does. ``owner`` is the name the
        runs were claimed under: if the connection was replaced since (by
        another thread that met an error on it), nothing is sent and
        OperationalError is raised, as for a lost connection."""
        with self.shared.lock:
            cursor = self._claim_cursor()
            if self.owner != owner:
                raise psycopg.OperationalError(
                    "the claim connection was replaced; the successes go to the writer"
                )
            succeeded, jobs = store.succeed_and_claim(
                cursor, owner, job_ids, fences, results_json, queues, limits, lease_seconds
            )
        instruments.observe_claimed(jobs)
        return succeeded, jobs
