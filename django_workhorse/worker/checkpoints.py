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
import select
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
        connection the server closed while it sat idle (a restart of
        PostgreSQL, a terminated session) is replaced before it is used, so
        it costs no attempt. One that breaks during a write makes that write
        raise, and the handler's attempt fails like on any database error
        (the job is retried, its recorded stages kept); the next use opens a
        new one."""
        with self._connection().cursor() as cursor:
            yield cursor

    def _connection(self) -> psycopg.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and not conn.closed and not conn.broken and _hung_up(conn):
            conn.close()
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


def _hung_up(conn: psycopg.Connection) -> bool:
    """Whether the server has closed (or spoken on) an idle connection.

    Between two checkpoints the connection is idle, and the server sends
    nothing unasked on it (it never LISTENs): anything to read there is the
    FATAL message and the end of a session PostgreSQL terminated (a restart,
    pg_terminate_backend). Without this check the next checkpoint, perhaps
    hours later, would meet the dead socket and fail its job's attempt. One
    poll, no round trip; a connection lost without a word from the server
    (a cut network) is still only found by the write.
    """
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(conn.fileno(), select.POLLIN)
            return bool(poller.poll(0))
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return True
    return bool(readable)
