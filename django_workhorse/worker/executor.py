"""One claimed run, from its admission to what is written about it.

Every runner (the worker's slots and event loop, ``run_jobs`` in a test's
thread) takes a claimed job through the same steps, defined here once:

* a run is a ``Running``: the claimed job, its definition, its context, its
  deadline and the owner name it was claimed under;
* ``admit`` refuses a job that may not reach its handler;
* ``execute`` (sync) and ``aexecute`` (async) are the only code that calls a
  handler: the current job, tracing and run-time metrics, the checks of the
  thread's connections, and the timeout of an async handler; each returns
  a ``Finished``, the handler's end, and never raises;
* ``timed_out`` and ``mark_timeout`` are the one way a run past its
  deadline ends, whoever notices it (the worker's loop, its event loop,
  ``run_jobs``' timer);
* ``close`` turns a ``Finished`` into a ``Closing``, what to write: the
  encoded result, or the attempt's outcome, whether it is retried, after how
  long. It is pure: no database, no hook, no log line.

The runners differ only in how they write a ``Closing`` (the worker's writer
in batches, or a success with the worker's next claim: one held for the
loop's claim, or the one-slot route's; ``run_jobs`` one by one) and hand
what the database recorded to ``report.Reporter``, which logs, calls the
hooks and hands the run's after-recorded call what was recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.db import close_old_connections, connections
from django.db.transaction import TransactionManagementError
from psycopg.pq import TransactionStatus

from ..context import JobContext, SleepRequested, reset_current, set_current
from ..core.definitions import JobDefinition
from ..core.payloads import encode_result
from ..db.store import ClaimedJob
from ..exceptions import InvalidPayloadError, JobCanceledError, JobTimeout
from ..states import AttemptOutcome
from . import instruments
from .outcomes import admit as admission
from .outcomes import error_json, retry_decision, timeout_error

SUCCEEDED = AttemptOutcome.SUCCEEDED.value
FAILED = AttemptOutcome.FAILED.value
TIMED_OUT = AttemptOutcome.TIMED_OUT.value
CANCELED = AttemptOutcome.CANCELED.value
SLEPT = AttemptOutcome.SLEPT.value


@dataclass(eq=False)
class Running:
    """One claimed job while its runner owns it.

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

    Built once by whoever ends the run and never changed afterwards; a new
    one is built when something else is to be recorded (a refused result).
    """

    running: Running
    ok: bool
    value: Any = None
    error: BaseException | None = None
    kind: str = FAILED
    """How the attempt closes if it failed: ``AttemptOutcome.FAILED``,
    ``TIMED_OUT`` or ``CANCELED``."""
    retryable: bool = True
    """False when the failure must not be retried whatever the job's budget
    (a payload or result that cannot be stored, a cancel)."""
    abandoned: bool = False
    """A timed-out or canceled run whose handler is still going: its slot
    stays busy until it returns."""


# -- before the handler --------------------------------------------------------


def admit(running: Running, runner: str) -> Finished | None:
    """None when ``running`` may reach its handler; else its refused end
    (``outcomes.admit`` says why and whether it is retried). ``runner``
    names who claimed it, for the message of a name no handler answers to."""
    refusal = admission(running.job, running.definition, runner)
    if refusal is None:
        return None
    return Finished(running, False, error=refusal.error, retryable=refusal.retryable)


# -- the handler ---------------------------------------------------------------


def execute(
    running: Running,
    *,
    idle: bool = True,
    own_connections: bool = True,
    active: instruments.Instruments | None = None,
) -> Finished:
    """Call a sync handler with its job current; its end, never raised.

    With ``own_connections`` (a worker's slot thread) this thread's Django
    connections are checked as around a request: after every run, and
    before one when the thread was ``idle`` (a connection may have outlived
    CONN_MAX_AGE or broken while it waited); a transaction the handler left
    open is rolled back and fails its run. ``run_jobs`` runs on the test's
    own connection and leaves it to the test. The caller gives the run a
    copy of its ``contextvars``.
    """
    token = set_current(running.context)
    try:
        if idle and own_connections:
            close_old_connections()
        value = instruments.call_handler(running) if active is None else active.call(running)
        finished = Finished(running, True, value)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the run's end
        finished = Finished(running, False, error=exc)
    try:
        if not own_connections:
            return finished
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


async def aexecute(
    running: Running,
    *,
    own_connections: bool = True,
    active: instruments.Instruments | None = None,
) -> Finished:
    """Await an async handler under its job's timeout; its end, never raised.

    The caller makes the job current in the task's context. At the deadline
    the run's context is marked timed out in the same loop turn as the
    timeout scope's own cancel, before the ``CancelledError`` reaches the
    handler, so its span records the timeout, not a cancel. With
    ``own_connections`` (a worker), the connections its ORM calls used are
    checked after it raised.
    """
    loop = asyncio.get_running_loop()
    mark: asyncio.TimerHandle | None = None
    when: float | None = None
    value: Any = None
    raised: BaseException | None = None
    scope = asyncio.timeout(running.job.timeout)
    try:
        async with scope:
            when = scope.when()
            if when is not None:
                mark = loop.call_at(when, mark_timeout, running)
            if active is None:
                value = await instruments.await_handler(running)
            else:
                value = await active.call_async(running)
    except BaseException as exc:
        raised = exc
    finally:
        if mark is not None:
            mark.cancel()
    if scope.expired() or (when is not None and loop.time() >= when):
        # The deadline passed: timed out, however the handler ended after
        # its cancel (raised, swallowed it and returned, ...), or without a
        # cancel: one that blocked the loop past its deadline and returned
        # before the loop could fire the timeout.
        finished = timed_out(running, abandoned=False)
    elif raised is None:
        finished = Finished(running, True, value)
    else:
        finished = Finished(running, False, error=raised)
    if raised is not None and own_connections:
        # What the handler raised may have come from a connection that
        # broke under it: check them on the thread its ORM calls ran on.
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await sync_to_async(close_broken_connections)()
    return finished


# -- the thread's connections --------------------------------------------------


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


# -- past the deadline ---------------------------------------------------------


def mark_timeout(running: Running, *, abandoned: bool = False) -> JobTimeout:
    """Mark ``running``'s context ended by its timeout (at its deadline),
    once: its span and a Django task report the timeout, whatever the
    handler does after. Returns the error recorded for it."""
    ended = running.context._ended_with
    if isinstance(ended, JobTimeout):
        return ended
    error = timeout_error(running.job.timeout, abandoned=abandoned)
    running.context._record_end(error)
    return error


def timed_out(running: Running, *, abandoned: bool) -> Finished:
    """The end of a run past its deadline: its attempt closes timed out.
    ``abandoned`` when its handler is still going (a worker cannot stop a
    thread): its slot stays busy until it returns."""
    error = mark_timeout(running, abandoned=abandoned)
    return Finished(running, False, error=error, kind=TIMED_OUT, abandoned=abandoned)


def canceled(running: Running) -> Finished:
    """The end of a run an operator's cancel reached while it ran: acked at
    once, its handler abandoned (it keeps its slot until it returns)."""
    error = JobCanceledError(f"job {running.job.job_id} was canceled by an operator while it ran")
    running.context._record_end(error)
    return Finished(running, False, error=error, kind=CANCELED, retryable=False, abandoned=True)


def past_deadline(running: Running) -> bool:
    """Whether ``running`` went past its deadline (checked as it returns)."""
    return running.deadline is not None and time.monotonic() >= running.deadline


# -- what to write -------------------------------------------------------------


class Closing:
    """What to write for a finished run: ``close``'s answer.

    ``outcome`` is the attempt's (``AttemptOutcome``): succeeded (with
    ``encoded``, the result's JSON), slept, or a failure (failed, timed out,
    canceled) with whether it is retried and after how long (None: the
    job's backoff policy, applied by the database).
    """

    __slots__ = ("delay", "encoded", "item", "outcome", "retryable")

    def __init__(
        self,
        item: Finished,
        outcome: str,
        encoded: str = "",
        retryable: bool = False,
        delay: float | None = None,
    ) -> None:
        self.item = item
        self.outcome = outcome
        self.encoded = encoded
        self.retryable = retryable
        self.delay = delay

    @property
    def running(self) -> Running:
        return self.item.running

    @property
    def exception(self) -> BaseException:
        assert self.item.error is not None, "a failure or sleep carries its exception"
        return self.item.error

    @property
    def failed(self) -> bool:
        return self.outcome != SUCCEEDED and self.outcome != SLEPT

    def error_json(self) -> str:
        """The error envelope ``workhorse_fail_many_v1`` stores."""
        return error_json(self.exception)


def close(item: Finished) -> Closing:
    """What to write for ``item``: pure, the one place that decides it.

    A result that cannot be stored as JSON fails its attempt without retry;
    a cancel (acked, raised, or an async handler cancelled after a cancel
    was requested: its ``CancelledError`` is not a failure) is never retried;
    any other failure is retried as the job's ``retry_on`` and backoff say.
    """
    if item.ok:
        try:
            return Closing(item, SUCCEEDED, encode_result(item.value))
        except InvalidPayloadError as not_json:
            item = refused(item, not_json)
    elif type(item.error) is SleepRequested:
        return Closing(item, SLEPT)
    exc = item.error
    assert exc is not None, "a failed run carries its exception"
    running = item.running
    if (
        item.kind == CANCELED
        or isinstance(exc, JobCanceledError)
        or (isinstance(exc, asyncio.CancelledError) and running.context.cancel_requested)
    ):
        return Closing(item, CANCELED)
    retry = retry_decision(
        running.definition, exc, running.job.attempt, kind=item.kind, retryable=item.retryable
    )
    return Closing(item, item.kind, "", retry.retryable, retry.delay)


def refused(item: Finished, error: InvalidPayloadError) -> Finished:
    """``item``'s run failed, without retry, because its result cannot be
    stored: ``error`` says why (not JSON, or the database refused it)."""
    return Finished(item.running, False, error=error, retryable=False, abandoned=item.abandoned)


def refused_by_database(item: Finished, reason: object) -> Finished:
    """``item``'s result, refused by the database (too large, say)."""
    error = InvalidPayloadError(
        f"the database refused to store the result of job {item.running.job.name!r}: "
        f"{str(reason).strip()}; return something smaller or simpler"
    )
    return refused(item, error)
