"""The connections handlers record their checkpoints on.

A checkpoint is written while the handler waits, from the handler's own
thread (for an async handler, from the thread ``sync_to_async`` runs
thread-sensitive code on, as for Django's async ORM), in a transaction of
its own: never inside a transaction the
handler has open on Django's connection, whose row locks would then be held
for as long as the handler's transaction lasts. Each thread opens its
connection on its first checkpoint and keeps it for the next ones, so a
worker whose jobs never checkpoint opens none.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import psycopg

from .connection import connect


class RunConnections:
    """One autocommit connection per thread that writes checkpoints."""

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self._local = threading.local()
        self._lock = threading.Lock()
        self._opened: list[psycopg.Connection] = []

    @contextlib.contextmanager
    def cursor(self) -> Iterator[psycopg.Cursor]:
        """A cursor on this thread's connection, opened on first use. A
        connection that broke is replaced on the next use; the write that met
        the break raises, and the handler's attempt fails like on any
        database error (the job is retried, its recorded stages kept)."""
        with self._connection().cursor() as cursor:
            yield cursor

    def _connection(self) -> psycopg.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.broken:
            conn = connect(self.alias, application_name="workhorse-checkpoint")
            self._local.conn = conn
            with self._lock:
                self._opened = [c for c in self._opened if not c.closed]
                self._opened.append(conn)
        return conn

    def close(self) -> None:
        """Close every connection opened so far (the worker is stopping)."""
        with self._lock:
            opened, self._opened = self._opened, []
        for conn in opened:
            with contextlib.suppress(psycopg.Error):
                conn.close()
