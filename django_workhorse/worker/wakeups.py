"""The LISTEN connection: wakes the claim loop when its queues get work, and
hears the operator's control messages.

Enqueue sends ``NOTIFY "workhorse:<queue>"`` on commit, with an empty payload
for ready work or the epoch seconds of the earliest run_at for scheduled work.
A worker listens only to its own queues, so traffic on other queues never
wakes it.

LISTEN is the one thing a worker needs a session for, so the listener has a
connection of its own, to PostgreSQL directly: ``WORKHORSE['LISTEN_DATABASE']``
names the alias to open it on when the worker's database is reached through
a transaction-mode pooler (where a LISTEN would stay on whichever server
connection ran it, and notifications go nowhere). Before it listens, the
listener asks the server for its process id: one that differs from the id
the connection was given at start-up means a pooler sits in between, and the
listener listens to nothing there; the worker polls and says why, once. Then
it checks that a NOTIFY sent on the worker's own database connection
arrives (the same database, delivered); if none does, the worker polls and
says so.

Every worker also listens to ``workhorse_control``, where
``workhorse_cancel_v1`` announces the cancel of a running job (JSON:
``action``, ``job_id``, ``worker``, ``fence``); the worker holding that run
stops it at once, the others ignore it. A control message lost (the
connection down, a pooler) is made up for by the heartbeat's reply, which
carries the same cancel request.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence

import psycopg
from psycopg import sql

from ..db import store
from .connection import connect, retry_delays

logger = logging.getLogger("django_workhorse.worker")

SELF_TEST_TIMEOUT = 2.0

CONTROL_CHANNEL = "workhorse_control"


def channel(queue: str) -> str:
    return f"workhorse:{queue}"


class PooledConnection(Exception):
    """The listener's connection goes through a pooler: LISTEN cannot work there."""


def through_pooler(conn: psycopg.Connection) -> bool:
    """Whether ``conn`` reaches PostgreSQL through a pooler such as PgBouncer.

    PostgreSQL tells each connection its backend's process id at start-up; a
    pooler answers the start-up itself, with an id of its own making, and
    forwards statements to whichever server connection it picks. A server
    whose ``pg_backend_pid()`` differs from the id the connection was given
    is therefore not the other end of this connection."""
    row = conn.execute("SELECT pg_backend_pid()").fetchone()
    return row is None or row[0] != conn.info.backend_pid


class Listener(threading.Thread):
    """Calls ``on_ready()`` for ready work and ``on_due(epoch)`` for scheduled work."""

    def __init__(
        self,
        *,
        alias: str,
        queues: Sequence[str],
        on_ready: Callable[[], None],
        on_due: Callable[[float], None],
        on_cancel: Callable[[int, int, str], None] | None = None,
        send_probe: Callable[[str], None] | None = None,
        application_name: str = "workhorse-listener",
        pulse: tuple[str, float, Callable[[float, bool], None]] | None = None,
    ) -> None:
        super().__init__(name="workhorse-listener", daemon=True)
        self.alias = alias
        self.application_name = application_name
        self.send_probe = send_probe
        """Sends the start-up NOTIFY on the worker's database connection
        (None: on the listener's own)."""
        self.pooled = False
        """Set when the listener's connection turned out to go through a
        pooler: it listens to nothing and the worker polls."""
        self.queues = list(queues)
        self.on_ready = on_ready
        self.on_due = on_due
        self.on_cancel = on_cancel
        self.stop_event = threading.Event()
        self.delivering = threading.Event()
        """Set once the start-up self-test saw a NOTIFY arrive."""
        self.self_test_done = threading.Event()
        self.pulse = pulse
        """(worker id, seconds, on_pulse): prove the worker alive for that
        long every half of it on this connection (``workhorse_pulse_v1``);
        ``on_pulse(sent, leads)`` hears each proof that landed, with the
        monotonic time it set out and whether the worker leads the fleet's
        sweeps. None: no proof (a pooled listener gives none)."""
        self._next_pulse = 0.0
        self._conn: psycopg.Connection | None = None

    def stop(self) -> None:
        self.stop_event.set()

    def _listen(self) -> psycopg.Connection:
        conn = connect(self.alias, application_name=self.application_name)
        if through_pooler(conn):
            conn.close()
            raise PooledConnection(self.alias)
        for queue in self.queues:
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel(queue))))
        if self.on_cancel is not None:
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(CONTROL_CHANNEL)))
        self._pulse(conn)
        return conn

    def _pulse(self, conn: psycopg.Connection) -> None:
        """Prove the worker alive, on this direct connection: the one path to
        the database that no lock and no pooler can hold up
        (docs/worker.md#liveness)."""
        if self.pulse is None:
            return
        worker_id, seconds, on_pulse = self.pulse
        sent = time.monotonic()
        with conn.cursor() as cursor:
            leads = store.pulse(cursor, worker_id, seconds)
        self._next_pulse = sent + seconds / 2
        on_pulse(sent, leads)

    def run(self) -> None:
        probe = f"workhorse-selftest:{id(self)}:{time.monotonic_ns()}"[:63]
        conn: psycopg.Connection | None
        try:
            conn = self._conn = self._listen()
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(probe)))
            if self.send_probe is None:
                conn.execute("SELECT pg_notify(%s, 'probe')", [probe])
            else:
                self.send_probe(probe)
        except PooledConnection:
            self.pooled = True
            self.self_test_done.set()
            return
        except psycopg.Error as exc:
            logger.warning("workhorse: cannot LISTEN (%s); polling instead", exc)
            self.self_test_done.set()
            # Wake-ups resume once a connection can be made again.
            conn = self._reconnect()
        deadline = time.monotonic() + SELF_TEST_TIMEOUT
        while conn is not None and not self.stop_event.is_set():
            try:
                # At most 0.5 s, the start-up self-test too: each round ends
                # by looking at the stop flag (a stop during the self-test
                # waited for its whole timeout).
                timeout = 0.5
                if self.pulse is not None:
                    wait = self._next_pulse - time.monotonic()
                    if wait <= 0:
                        self._pulse(conn)
                        wait = self._next_pulse - time.monotonic()
                    timeout = max(0.01, min(timeout, wait))
                if not self.self_test_done.is_set():
                    timeout = min(timeout, max(0.01, deadline - time.monotonic()))
                for note in conn.notifies(timeout=timeout):
                    if note.channel == probe:
                        self.delivering.set()
                        self.self_test_done.set()
                    elif note.channel == CONTROL_CHANNEL:
                        self._control(note.payload)
                    elif note.payload:
                        try:
                            self.on_due(float(note.payload))
                        except ValueError:
                            self.on_ready()
                    else:
                        self.on_ready()
                if not self.self_test_done.is_set() and time.monotonic() >= deadline:
                    self.self_test_done.set()
            except psycopg.Error as exc:
                if self.stop_event.is_set():
                    break
                logger.warning("workhorse listener: connection lost (%s); reconnecting", exc)
                conn = self._reconnect()
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                conn.close()

    def _reconnect(self) -> psycopg.Connection | None:
        """A new LISTEN connection, tried with a delay doubling from 0.5 s to
        10 s while the database stays away (the tries at DEBUG: one warning
        per outage); None once the listener is stopped."""
        self._close()
        for delay in retry_delays():
            if self.stop_event.wait(delay):
                return None
            try:
                conn = self._conn = self._listen()
            except PooledConnection:
                self.pooled = True
                return None
            except psycopg.Error as exc:
                logger.debug("workhorse listener: cannot reconnect yet (%s)", exc)
                continue
            self.on_ready()  # something may have arrived while we were away
            return conn
        return None  # retry_delays never ends

    def _close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None

    def _control(self, payload: str) -> None:
        """One control message; one that cannot be read is logged and skipped."""
        try:
            message = json.loads(payload)
            if message.get("action") != "cancel":
                return  # a message of a later version: not ours to act on
            job_id, fence, owner = int(message["job_id"]), int(message["fence"]), message["worker"]
        except (ValueError, TypeError, KeyError, AttributeError):
            logger.warning(
                "workhorse listener: unreadable control message %r ignored", payload[:200]
            )
            return
        on_cancel = self.on_cancel
        if on_cancel is None:
            return
        try:
            on_cancel(job_id, fence, str(owner))
        except Exception:  # the listener must go on hearing wake-ups
            logger.exception("workhorse listener: the cancel of job #%s failed", job_id)
