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

import contextlib
from collections.abc import Callable, Sequence

import psycopg

from .. import store
from . import instruments


class ClaimSession:
    """One claim connection at a time, used by one thread at a time (the
    worker's claim lock). Its claims share one cursor, which keeps the
    loaders of the claim's columns from one call to the next: one-job calls
    took 95 to 115 µs of client CPU on it against 120 to 170 µs with a
    cursor per call (docs/decisions.md)."""

    def __init__(self, worker_id: str, connect: Callable[[], psycopg.Connection]) -> None:
        self.worker_id = worker_id
        self.owner = worker_id
        self.conn: psycopg.Connection | None = None
        self._cursor: psycopg.Cursor | None = None
        self._connect = connect
        self._opened = 0

    def open(self) -> psycopg.Connection:
        """A new connection, and with it a new owner name for its claims."""
        conn = self._connect()
        self.owner = self.worker_id if self._opened == 0 else f"{self.worker_id}+{self._opened}"
        self._opened += 1
        self.conn = conn
        self._cursor = conn.cursor()
        return conn

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(psycopg.Error):
                self.conn.close()

    def claim(
        self, queues: Sequence[str], limits: Sequence[int], lease_seconds: float
    ) -> tuple[str, list[store.ClaimedJob]]:
        """Claim up to ``limits[i]`` jobs of ``queues[i]``; the owner name
        they were claimed under, and the jobs."""
        owner = self.owner
        assert self._cursor is not None, "claims are made while connected"
        return owner, instruments.claim_many(self._cursor, owner, queues, limits, lease_seconds)

    def succeed_and_claim(
        self,
        job_ids: Sequence[int],
        fences: Sequence[int],
        results_json: Sequence[str],
        queues: Sequence[str],
        limits: Sequence[int],
        lease_seconds: float,
    ) -> tuple[list[tuple[int, bool]], list[store.ClaimedJob]]:
        """Record successes of runs claimed under the current owner name,
        then claim as ``claim`` does, in one call (see ``store``)."""
        assert self._cursor is not None, "claims are made while connected"
        succeeded, jobs = store.succeed_and_claim(
            self._cursor, self.owner, job_ids, fences, results_json, queues, limits, lease_seconds
        )
        return succeeded, instruments.observe_claimed(self._cursor, jobs)
