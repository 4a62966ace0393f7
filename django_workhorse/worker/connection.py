"""The worker's own psycopg connections, opened from a Django database alias.

The worker keeps its connections outside Django's per-thread connection
handling: they live as long as the worker, autocommit, so each SQL function
call is its own short transaction. jsonb is read as text, exactly as through
a Django cursor, so ``store`` treats both alike.

Nothing outlives its transaction on them (docs/scaling.md): no session
``SET`` (a claim's asynchronous commit is set for its own transaction,
``store.UNFLUSHED``), no session advisory lock, no temporary table, and no
prepared statement (``prepare_threshold=None``: psycopg would otherwise
prepare a query after its fifth run, and a transaction-mode pooler hands
the next transaction to a server connection that never saw it). The one
session a worker needs, LISTEN, is ``wakeups.py``'s direct connection.

A worker process holds two connections to its database however many slots
and features it runs (docs/worker.md#connections): the *claim* connection
(claims, look-ups, checkpoints, the periodic sweeps) and the *lease*
connection (lease renewals, stall recovery, the writer's batches), each a
``SharedConnection`` its threads take turns on.
"""

from __future__ import annotations

import contextlib
import select
import threading
import time
from collections.abc import Callable, Iterator

import psycopg
from django.db import connections
from psycopg.types.string import TextLoader

IDLE_CHECK_AFTER = 1.0
"""Seconds a shared connection sits unused before its next user first looks
whether the server closed it meanwhile."""

APPLICATION_NAME_MAX = 63
"""PostgreSQL keeps this many bytes of an application_name (NAMEDATALEN - 1)."""


def application_name(role: str, worker_id: str | None = None) -> str:
    """``<role> <worker id>``, cut to what PostgreSQL keeps: the id's end,
    ``<pid>:<random>``, is what tells two workers of one host apart, so its
    start is what goes when it is too long."""
    if worker_id is None:
        return role
    room = APPLICATION_NAME_MAX - len(role.encode()) - 1
    tail = worker_id.encode("ascii", "replace")[-room:].decode("ascii") if room > 0 else ""
    return f"{role} {tail}" if tail else role


def connect(
    alias: str, *, application_name: str = "workhorse", autocommit: bool = True
) -> psycopg.Connection:
    """A new autocommit connection to the database of ``alias``.

    The alias's own ``application_name`` (OPTIONS), if it sets one, wins over
    ``application_name``: it goes in the connection string, never in a SET.
    """
    wrapper = connections[alias]
    if wrapper.vendor != "postgresql":
        raise psycopg.NotSupportedError(
            f"database {alias!r} uses {wrapper.vendor}; django-workhorse needs PostgreSQL"
        )
    params = dict(wrapper.get_connection_params())
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("server_side_binding", None)
    params["prepare_threshold"] = None  # never a prepared statement (see above)
    params.setdefault("application_name", application_name)
    conn = psycopg.connect(**params, autocommit=autocommit)
    conn.adapters.register_loader("jsonb", TextLoader)
    conn.adapters.register_loader("json", TextLoader)
    return conn


class SharedConnection:
    """One autocommit connection that several threads use, one at a time.

    ``use()`` lends the connection for one unit of work (a statement, or a
    transaction of several) under a lock, connecting first when there is
    none or the last one broke. ``opened`` counts the connections made so
    far; the claim session names its owner after it (``claims.py``).
    """

    def __init__(self, connect: Callable[[], psycopg.Connection]) -> None:
        self._connect = connect
        self.lock = threading.RLock()
        """Held by whoever uses the connection (``use()``, or ``ready()``'s caller)."""
        self.conn: psycopg.Connection | None = None
        self.opened = 0
        self._used_at = 0.0

    @contextlib.contextmanager
    def use(self) -> Iterator[psycopg.Connection]:
        """The connection, for the caller alone until the block ends."""
        with self.lock:
            yield self.ready()

    def ready(self) -> psycopg.Connection:
        """The connection, connecting first if there is none or it broke;
        the caller holds ``lock`` for as long as it uses it. One that sat
        idle for a while and that the server closed meanwhile (a restart of
        PostgreSQL or of a pooler, a terminated session) is replaced first:
        a checkpoint hours after the last claim must not fail its job's
        attempt on a dead socket. (A connection in constant use, the claim
        loop's, is not looked at each time: one poll a second is enough.)"""
        conn = self.conn
        now = time.monotonic()
        if (
            conn is None
            or conn.closed
            or conn.broken
            or (now - self._used_at > IDLE_CHECK_AFTER and _hung_up(conn))
        ):
            conn = self.open()
        self._used_at = now
        return conn

    @contextlib.contextmanager
    def cursor(self) -> Iterator[psycopg.Cursor]:
        """A cursor on the connection, for the caller alone until the block ends."""
        with self.use() as conn, conn.cursor() as cursor:
            yield cursor

    def open(self) -> psycopg.Connection:
        """A new connection in place of the current one (which is closed)."""
        with self.lock:
            self.close()
            conn = self._connect()
            self.conn = conn
            self.opened += 1
            return conn

    def close(self, conn: psycopg.Connection | None = None, *, wait: bool = True) -> None:
        """Close the connection; with ``conn``, only if it is still that one
        (a thread that met an error on it drops it, not its replacement).

        ``wait=False`` (a worker's last close, at a forced stop too) waits at
        most a second for a user stuck in a statement (a write held up by a
        lock, an abandoned handler's checkpoint), then leaves the connection
        to the end of the process: closing it under a statement in flight on
        another thread is not safe."""
        if not self.lock.acquire(timeout=-1 if wait else 1.0):
            return
        try:
            if self.conn is None or (conn is not None and conn is not self.conn):
                return
            old, self.conn = self.conn, None
            with contextlib.suppress(psycopg.Error):
                old.close()
        finally:
            self.lock.release()

    @property
    def broken(self) -> bool:
        """No usable connection now (none yet, closed, or broken)."""
        conn = self.conn
        return conn is None or conn.closed or conn.broken


def _hung_up(conn: psycopg.Connection) -> bool:
    """Whether the server has closed (or spoken on) an idle connection.

    Between two uses the connection is idle, and the server sends nothing
    unasked on it (it never LISTENs): anything to read there is the FATAL
    message and the end of a session PostgreSQL terminated. One poll, no
    round trip; a connection lost without a word from the server (a cut
    network) is still only found by the next statement.
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


def retry_delays(first: float = 0.5, longest: float = 10.0) -> Iterator[float]:
    """Seconds to wait before each new try after a database error: doubling
    from ``first`` up to ``longest``, so that an outage of minutes is not
    met with a retry (and a log line) twice a second."""
    delay = first
    while True:
        yield delay
        delay = min(delay * 2, longest)
