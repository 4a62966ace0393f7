"""Running handlers: a thread per sync slot, one event loop for async handlers.

Each run reports back by calling ``done`` with a ``Finished`` item, on the
thread (or loop) that ran it; the worker hands those to its writer thread.
Nothing here touches the database (a handler's own ORM use aside, and the
check of the async handlers' connections after one raised).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.db import close_old_connections, connections
from django.db.transaction import TransactionManagementError
from psycopg.pq import TransactionStatus

from ..context import JobContext, reset_current, set_current
from ..definitions import JobDefinition
from ..exceptions import JobTimeout
from ..outcomes import timeout_error
from ..states import AttemptOutcome
from ..store import ClaimedJob
from . import instruments

logger = logging.getLogger("django_workhorse.worker")


@dataclass(eq=False)
class Running:
    """One claimed job while the worker owns it.

    ``job``, ``definition``, ``context``, ``owner`` and ``deadline`` are set
    before the run is published and never change. ``lease_lost``,
    ``timed_out`` and ``canceled`` are changed only by the worker's
    ``Ledger``, under its lock (see ``ledger.py``).
    """

    job: ClaimedJob
    definition: JobDefinition[..., Any] | None
    context: JobContext
    started: float = field(default_factory=time.monotonic)
    owner: str = ""
    """The owner name the job was claimed under: every write of this run
    presents it with the fence (see ``claims.py``)."""
    deadline: float | None = None
    renewed: float = 0.0
    """When (monotonic, as sent) the last renewal that renewed this run's
    lease set out; its lease runs at least ``LOCK_DURATION`` from then, or
    from ``started`` (docs/worker.md#liveness)."""
    lease_lost: bool = False
    timed_out: bool = False
    """The timeout fired and the attempt was recorded; the thread may still run."""
    canceled: bool = False
    """An operator's cancel was acked for this run; its handler may still run."""


@dataclass(slots=True)
class Finished:
    """A handler's end: its return value, or the exception it raised.

    Built once by whoever ends the run and never changed afterwards; the
    writer builds a new one when it has to record something else.
    """

    running: Running
    ok: bool
    value: Any = None
    error: BaseException | None = None
    kind: str = AttemptOutcome.FAILED.value
    """How the attempt closes if it failed: ``AttemptOutcome.FAILED``,
    ``TIMED_OUT`` or ``CANCELED``."""
    retryable: bool = True
    """False when the failure must not be retried whatever the job's budget
    (a payload or result that cannot be stored, a cancel)."""
    abandoned: bool = False
    """A timed-out or canceled run whose handler is still going: its slot
    stays busy until it returns."""


class SyncSlots:
    """Up to ``count`` threads running sync handlers, fed in claim order.

    Waking a thread costs far more than a short handler, so a submit wakes at
    most one thread, and a thread that takes a job wakes the next one when
    more are waiting. A burst of short jobs is then run by the few threads
    that are awake while the rest are still waking, and long jobs still each
    start on their own thread, one thread wake-up apart. Threads are started
    only when none is idle. They are daemon threads: a handler abandoned
    after its timeout never holds the process open. ``done`` gets each
    run's end on its thread and may return the run to start next there.
    """

    def __init__(self, count: int, done: Callable[[Finished], Running | None], name: str) -> None:
        self._jobs: deque[Running] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._done = done
        self._max = count
        self._name = name
        self._threads: list[threading.Thread] = []
        self._idle = 0  # threads waiting for a job
        self._waking = 0  # threads woken or started that have not looked for a job yet
        self._closed = False

    def submit(self, runs: list[Running]) -> None:
        """Queue ``runs`` in order; wakes one thread, which wakes the next."""
        with self._cond:
            self._jobs.extend(runs)
            self._wake_one()

    def _wake_one(self) -> None:
        """With the lock held: get one more thread looking for a job, unless
        one is already on its way (it wakes the next one itself)."""
        if self._waking > 0:
            return
        if self._idle:
            self._waking += 1
            self._cond.notify()
        elif len(self._threads) < self._max:
            self._waking += 1
            thread = threading.Thread(
                target=self._serve, name=f"{self._name}-slot-{len(self._threads)}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def close(self) -> list[Running]:
        """Stop the threads once their current run returns; the runs that
        were queued and will now never start are returned."""
        with self._cond:
            self._closed = True
            dropped = list(self._jobs)
            self._jobs.clear()
            self._cond.notify_all()
        return dropped

    def _serve(self) -> None:
        woken = True
        while True:
            with self._cond:
                if woken:
                    self._waking -= 1
                waited = woken
                woken = False
                while not self._jobs and not self._closed:
                    self._idle += 1
                    self._cond.wait()
                    self._idle -= 1
                    self._waking -= 1
                    waited = True
                if self._closed:
                    return
                running = self._jobs.popleft()
                if self._jobs:
                    self._wake_one()
            # ``done`` may hand this thread the next run (one slot: see
            # ``Worker._carry_on``); it runs here, straight after the last.
            next_run: Running | None = running
            while next_run is not None:
                if next_run.timed_out or next_run.canceled or self._closed:
                    # Its attempt was recorded as timed out (or canceled) while
                    # it waited for a thread, or the worker is stopping:
                    # running it now could only run the job twice. This gives
                    # its slot back; nothing is written.
                    self._done(
                        Finished(next_run, False, error=JobTimeout("timed out before it started"))
                    )
                    break
                # A thread that goes straight from one job to the next has just
                # closed its stale connections after the last one.
                next_run = self._done(run_sync(next_run, idle=waited))
                waited = False


def run_sync(running: Running, *, idle: bool = True) -> Finished:
    """Run one sync handler with its job context set; never raises.

    The run gets a copy of the thread's ``contextvars``, as an async run gets
    its task's: what a handler binds there (a logging library's per-job
    values, say) ends with its run instead of carrying into the next job of
    the thread.

    Django's connections of this thread are checked as around a request:
    after every run, and before one when the thread was ``idle`` (a
    connection may have outlived CONN_MAX_AGE or broken while it waited).
    """
    return contextvars.copy_context().run(_run_sync, running, idle)


def _run_sync(running: Running, idle: bool) -> Finished:
    token = set_current(running.context)
    try:
        if idle:
            close_old_connections()
        finished = Finished(running, True, instruments.call_handler(running))
    except BaseException as exc:
        finished = Finished(running, False, error=exc)
    try:
        left_open = end_run_on_connections()
        if left_open and finished.ok:
            error = TransactionManagementError(
                f"the handler returned with a transaction open on database {left_open[0]!r} "
                "(autocommit turned off without a commit, or an atomic block never exited); "
                "what it wrote there was rolled back"
            )
            finished = Finished(running, False, error=error)
        return finished
    finally:
        reset_current(token)


def end_run_on_connections() -> list[str]:
    """After a run, on this thread's Django connections: roll back what the
    handler left open, then close those that are unusable or past
    ``CONN_MAX_AGE`` (Django's ``close_old_connections``, in the same pass);
    the aliases where the rollback undid writes.

    A thread runs one job after another on the same Django connections. An
    atomic block left open (entered by hand, never exited) would put every
    later job of the thread inside it, and once Django closed the connection
    they all failed with "connection already closed"; autocommit left off
    would have its writes rolled back without a word. The blocks are exited
    as an exception would exit them, and autocommit comes back on.
    """
    undone: list[str] = []
    for conn in connections.all(initialized_only=True):
        if conn.in_atomic_block or (conn.connection is not None and not conn.autocommit):
            _end_open_transaction(conn, undone)
        conn.close_if_unusable_or_obsolete()
    return undone


def _end_open_transaction(conn: Any, undone: list[str]) -> None:
    """Exit the atomic blocks left open on ``conn`` and turn autocommit back
    on; its alias goes in ``undone`` when that rolled back a transaction."""
    try:
        info = getattr(conn.connection, "info", None)
        status = getattr(info, "transaction_status", TransactionStatus.IDLE)
        if status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
            undone.append(conn.alias)
        for block in reversed(list(conn.atomic_blocks)):
            block.__exit__(TransactionManagementError, None, None)
        if not conn.in_atomic_block and conn.connection is not None and not conn.autocommit:
            conn.rollback()
            conn.set_autocommit(True)
    except Exception:
        conn.close()  # the server rolls back what the connection held


def close_broken_connections() -> None:
    """Close this thread's Django connections that an error left unusable
    (the server ended the session: a restart, a terminated backend), so that
    the next query opens a new one; Django does it around a request.

    Async handlers reach the ORM through ``sync_to_async``, all on one thread
    and one connection per alias. Nothing else checks those connections: a
    broken one stayed broken, and every later async job failed with "the
    connection is closed". A connection inside a transaction is left alone,
    since another async handler may have it open.
    """
    for conn in connections.all(initialized_only=True):
        if conn.connection is None or not conn.errors_occurred:
            continue
        in_transaction = conn.in_atomic_block or not conn.autocommit
        if not in_transaction and not conn.is_usable():
            conn.close()


class AsyncSlots:
    """One event loop in its own thread; async handlers run as tasks on it.

    Every field but ``loop`` is touched only on the loop's thread (through
    ``call_soon_threadsafe``), so none needs a lock.
    """

    def __init__(self, done: Callable[[Finished], None], name: str) -> None:
        self._done = done
        self._closing = False
        self._tasks: dict[Running, asyncio.Task[Any]] = {}
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=f"{name}-asyncio", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        while True:
            try:
                self.loop.run_forever()
                return  # stopped by close()
            except BaseException:
                # asyncio lets SystemExit and KeyboardInterrupt out of the
                # task step or callback that raised them (a handler's child
                # task, a call_soon), which stops the loop. Every async run
                # would hang on a dead loop: run it again, and the tasks
                # waiting on the one that raised see its exception.
                logger.exception(
                    "workhorse: an async handler's task or callback raised past the event "
                    "loop; the loop goes on"
                )

    def submit(self, runs: list[Running]) -> None:
        """Start ``runs`` as tasks: one hand-off to the loop for all of them."""

        def start() -> None:
            for running in runs:
                if self._closing:
                    return  # the worker is stopping: these jobs were released
                if running.canceled:
                    # Acked canceled before its task existed: give its slot back.
                    self._done(Finished(running, False, error=asyncio.CancelledError()))
                    continue
                context = contextvars.copy_context()
                context.run(set_current, running.context)
                task = self.loop.create_task(self._run(running), context=context)
                task.add_done_callback(functools.partial(self._ended, running))
                self._tasks[running] = task

        self.loop.call_soon_threadsafe(start)

    async def _run(self, running: Running) -> None:
        timeout = running.job.timeout
        error = timeout_error(timeout, abandoned=False)
        mark: asyncio.TimerHandle | None = None
        when: float | None = None
        value: Any = None
        raised: BaseException | None = None
        scope = asyncio.timeout(timeout)
        try:
            async with scope:
                when = scope.when()
                if when is not None:
                    # Mark the run's context at the deadline, as the ledger does
                    # for a sync run: this fires in the same loop turn as the
                    # scope's own cancel, before the CancelledError reaches the
                    # handler, so its span records the timeout, not a cancel.
                    mark = self.loop.call_at(when, running.context._record_end, error)
                value = await instruments.await_handler(running)
        except BaseException as exc:
            raised = exc
        finally:
            if mark is not None:
                mark.cancel()
        if scope.expired() or (when is not None and self.loop.time() >= when):
            # The deadline passed: timed out, as marked, however the handler
            # ended after its cancel (raised, swallowed it and returned, ...),
            # or without a cancel: one that blocked the loop past its deadline
            # and returned before the loop could fire the timeout.
            finished = Finished(running, False, error=error, kind=AttemptOutcome.TIMED_OUT.value)
        elif raised is None:
            finished = Finished(running, True, value)
        else:
            finished = Finished(running, False, error=raised)
        if raised is not None:
            # What the handler raised may have come from a connection that
            # broke under it: check them on the thread its ORM calls ran on.
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await sync_to_async(close_broken_connections)()
        self._done(finished)

    def _ended(self, running: Running, task: asyncio.Task[Any]) -> None:
        self._tasks.pop(running, None)
        if task.cancelled():
            # Cancelled before its first step, so ``_run`` never ran to
            # report it: report it here, or its slot would stay taken.
            self._done(Finished(running, False, error=asyncio.CancelledError()))

    def cancel(self, running: Running) -> None:
        """Cancel ``running``'s task, if it has one (from any thread)."""

        def cancel() -> None:
            task = self._tasks.get(running)
            if task is not None:
                task.cancel()

        self.loop.call_soon_threadsafe(cancel)

    def stop_intake(self) -> None:
        """Start no more of what was submitted (the worker is stopping)."""

        def stop() -> None:
            self._closing = True

        self.loop.call_soon_threadsafe(stop)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
