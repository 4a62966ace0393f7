"""A thread that does one job every few seconds on the worker's claim connection.

The schedule sweeper, the queue-depth sampler, the retention run and the
vacuum turn share this loop: call ``tick`` with a cursor, log an error (a
database error as a warning, any other with its traceback) and drop the
connection if it broke (the next use reconnects), wait, until ``stop()``.

The cursor takes the connection for one statement at a time
(``TurnCursor``): each statement is its own transaction (autocommit), so a
retention turn of a hundred steps or a VACUUM of each table lets the
worker's claims in between its statements. Started alone (tests, tools), a
thread opens a connection of its own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import psycopg

from ..db.store import Cursor
from .connection import SharedConnection, connect

logger = logging.getLogger("django_workhorse.worker")


class PeriodicThread(threading.Thread):
    """Calls ``tick(cursor)`` every ``interval`` seconds until ``stop()``."""

    what = "periodic work"
    """Named in the warning logged when a tick meets a database error."""

    def __init__(
        self,
        alias: str,
        interval: float,
        *,
        name: str,
        connection: SharedConnection | None = None,
        duty: Callable[[], bool] | None = None,
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.alias = alias
        self.interval = interval
        self.duty = duty
        """For work one worker does for the whole fleet (the schedule sweep,
        the vacuum turn): whether this worker does it now
        (``Liveness.sweeps``); a turn it says no to is skipped, with no
        statement. None: always."""
        self._stopping = threading.Event()
        self._owns_connection = connection is None
        self._shared = connection or SharedConnection(lambda: connect(alias, application_name=name))

    def tick(self, cursor: Cursor) -> float | None:
        """One turn; returns the seconds to wait before the next one, or None
        for ``interval``."""
        raise NotImplementedError

    def first_wait(self) -> float:
        """Seconds before the first tick: none by default."""
        return 0.0

    def run(self) -> None:
        wait = self.first_wait()
        while not self._stopping.wait(wait):
            wait = self.interval
            duty = self.duty
            if duty is not None and not duty():
                continue
            try:
                sooner = self.tick_now()
                if sooner is not None:
                    wait = sooner
            except psycopg.Error as exc:
                logger.warning("workhorse: %s failed (%s); the next turn retries", self.what, exc)
                self._close()
            except Exception:
                # Any other error (a bug, a job a schedule cannot enqueue) is
                # logged with its traceback and retried like a database error:
                # it must not end the thread, and with it the work, silently.
                logger.exception("workhorse: %s failed; the next turn retries", self.what)
                self._close()
        self._close()

    def tick_now(self) -> float | None:
        """One tick, each statement on the connection in its turn."""
        with TurnCursor(self._shared) as cursor:
            return self.tick(cursor)

    def _close(self) -> None:
        """After an error: drop the connection if it broke (or is this
        thread's own), so that the next turn starts on a new one."""
        self.closed()
        if self._owns_connection or self._shared.broken:
            self._shared.close()

    def closed(self) -> None:
        """Called (on this thread) when its connection is dropped."""

    def stop(self) -> None:
        self._stopping.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(5.0)


class TurnCursor:
    """A cursor that takes a shared connection for each statement it runs.

    ``execute`` waits for the connection, runs the statement (its own
    transaction: the connection is in autocommit) and lets go; the rows stay
    with this cursor for ``fetchone``/``fetchall``. Only for autocommit
    work: two statements may run on two different connections if the first
    broke in between."""

    def __init__(self, shared: SharedConnection) -> None:
        self._shared = shared
        self._cursor: psycopg.Cursor | None = None

    def __enter__(self) -> TurnCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def execute(self, query: Any, params: Any = None) -> TurnCursor:
        with self._shared.use() as conn:
            cursor = self._cursor
            if cursor is None or cursor.connection is not conn:
                cursor = self._cursor = conn.cursor()
            cursor.execute(query, params)
        return self

    def _rows(self) -> psycopg.Cursor:
        if self._cursor is None:
            raise psycopg.ProgrammingError("no statement was run on this cursor")
        return self._cursor

    def fetchone(self) -> Any:
        return self._rows().fetchone()

    def fetchall(self) -> list[Any]:
        return self._rows().fetchall()

    @property
    def description(self) -> Any:
        return self._rows().description

    @property
    def rowcount(self) -> int:
        return self._rows().rowcount

    @property
    def connection(self) -> psycopg.Connection:
        """The connection now (a notice handler's place: vacuum's warnings)."""
        with self._shared.use() as conn:
            return conn

    def close(self) -> None:
        if self._cursor is not None:
            self._cursor.close()
            self._cursor = None
