"""A thread that does one job every few seconds on a connection of its own.

The schedule sweeper, the queue-depth sampler, the retention run and the
vacuum turn share this loop: connect when needed, call ``tick`` with a
cursor, log an error (a database error as a warning, any other with its
traceback) and drop the connection (the next tick reconnects), wait, until
``stop()``. Only this thread touches ``_conn``.
"""

from __future__ import annotations

import contextlib
import logging
import threading

import psycopg

from ..store import Cursor
from .connection import connect

logger = logging.getLogger("django_workhorse.worker")


class PeriodicThread(threading.Thread):
    """Calls ``tick(cursor)`` every ``interval`` seconds until ``stop()``."""

    what = "periodic work"
    """Named in the warning logged when a tick meets a database error."""

    def __init__(self, alias: str, interval: float, *, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.alias = alias
        self.interval = interval
        self._stopping = threading.Event()
        self._conn: psycopg.Connection | None = None

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
        """One tick on this thread's connection, connecting first if needed."""
        if self._conn is None or self._conn.closed:
            self._conn = connect(self.alias, application_name=self.name)
        with self._conn.cursor() as cursor:
            return self.tick(cursor)

    def _close(self) -> None:
        self.closed()
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None

    def closed(self) -> None:
        """Called (on this thread) when its connection is dropped."""

    def stop(self) -> None:
        self._stopping.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(5.0)
