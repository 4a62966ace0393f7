"""The writer thread: records finished runs in batches, on the worker's lease connection.

It is the worker's batch writer of the executor's closings: each run's
``Finished`` is turned into what to write by ``executor.close``, a batch
is written, and each run's recorded end goes to ``report.Reporter``, which
logs it and hands the ``ON_JOB_FAILURE`` and ``ON_JOB_CANCELED`` calls to the
hook thread (``hookcalls.py``): a slow or hanging hook never holds up the
next batch. The worker is told the batch landed (``on_written``) once
its runs are reported, so a run's after-recorded call gets what was recorded.

A handler's slot is free as soon as it returns; its result waits here for the
next batch. Each batch is one transaction of at most three SQL calls
(``succeed_many``, ``fail_many`` and ``sleep_many``, after a ``lock_runs``
of the batch when it needs more than one), whatever its size, so
the claim loop never waits on a finish and the database works on the
finishes while Python starts the next jobs. Until its write lands a run keeps its lease: the
heartbeat renews it with the running ones.

A batch whose transaction fails on a lost connection (or a deadlock, or a
server shutting down) is kept and written again on a new one: nothing of a
rolled-back transaction reached the database. The connection can also die
after the server committed the call and before its reply arrived; the run's
own first write then makes the fenced second one refused, so a run refused
in a batch written again is looked up in its job's attempts: one closed by
this run's attempt and owner is its own write, reported as written, not as
a lost lease. A value the database refuses to store fails only its own
run's attempt. Any other error stops the writer
and is handed to the worker, which stops.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, cast

import psycopg

from ..context import SleepRequested
from ..core.hooks import JobCancel, JobFailure
from ..db import store
from . import instruments
from .cancels import stored_reason
from .connection import SharedConnection, connect, retry_delays
from .executor import (
    CANCELED,
    SLEPT,
    SUCCEEDED,
    Closing,
    Finished,
    Running,
    close,
    refused_by_database,
)
from .hookcalls import HookCalls
from .linger import Linger
from .logs import job_extra
from .outcomes import Recorded
from .report import Reporter, recorded_failure

logger = logging.getLogger("django_workhorse.worker")

_STOP = object()

TRANSIENT_CLASSES = frozenset({"08", "40", "53", "57"})
"""SQLSTATE classes a batch is written again after: connection exception,
transaction rollback (serialization failure, deadlock), insufficient
resources, operator intervention (shutdown, cancel)."""


SUCCEEDED_OUTCOMES = frozenset({"succeeded"})
FAILED_OUTCOMES = frozenset({"failed", "timed_out", "canceled"})
SLEPT_OUTCOMES = frozenset({"slept"})
"""The attempt outcomes a success, a failure and a sleep close their run with."""
ENDED = frozenset({"succeeded", "failed", "canceled"})


class Writer(threading.Thread):
    """Writes ``Finished`` runs handed over with ``put``; ``stop`` flushes and ends it.

    ``in_flight`` tells how many runs are still going: a batch lingers for
    them, so a burst of short jobs is one transaction, not one per job.
    ``on_written`` gets the runs of a batch once its write has landed (or
    been refused by the fence); the caller's ledger counts what is handed
    over and not yet written. ``on_error`` is called if the writer dies.
    Once ``give_up`` is set a lost connection is no longer retried: a forced
    stop leaves the unwritten runs to lease expiry.

    Runs of one batch may have been claimed under different owner names
    (the claim connection was replaced in between); each owner's runs are
    written with their own calls. Apart from ``put`` and ``stop``, every
    field is used by the writer's thread only.
    """

    def __init__(
        self,
        *,
        alias: str,
        hook: Callable[[JobFailure], object] | None,
        in_flight: Callable[[], int],
        cancel_hook: Callable[[JobCancel], object] | None = None,
        hooks: HookCalls,
        on_written: Callable[[list[Running]], None],
        on_error: Callable[[BaseException], None],
        give_up: threading.Event,
        connection: SharedConnection | None = None,
        reporter: Reporter | None = None,
    ) -> None:
        super().__init__(name="workhorse-writer", daemon=True)
        self.alias = alias
        self.reporter = reporter or Reporter(hooks, hook, cancel_hook)
        self.in_flight = in_flight
        self.on_written = on_written
        self.on_error = on_error
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._linger = Linger()
        self._give_up = give_up  # set: stop retrying a lost connection (a forced stop)
        # The worker lends its lease connection, which the heartbeat shares
        # (docs/worker.md#connections); alone, the writer opens its own.
        self._owns_connection = connection is None
        self._shared = connection or SharedConnection(
            lambda: connect(alias, application_name="workhorse-writer")
        )
        self._again = False  # the batch is written again after a lost connection

    # -- from other threads -------------------------------------------------

    def put(self, item: Finished) -> None:
        self._queue.put(item)
        self._linger.arrived(self._queue.qsize())

    def stop(self) -> None:
        """Write what was handed over, then end.

        Waits as long as that takes (a database that cannot be reached is
        retried) until ``give_up`` is set; then waits one more second for a
        write under way and returns, leaving what is unwritten to lease
        expiry.
        """
        self._queue.put(_STOP)
        self._linger.arrived(self._queue.qsize())
        while self.is_alive() and not self._give_up.is_set():
            self.join(0.1)
        self.join(1.0)
        if self.is_alive():
            logger.warning(
                "workhorse writer: still writing at a forced stop; finished runs may not be "
                "written (their leases expire and they run again)"
            )

    # -- the thread -----------------------------------------------------------

    def run(self) -> None:
        batch: list[Finished] = []
        stopping = False
        delays = retry_delays()
        try:
            while True:
                if not batch:
                    if stopping:
                        return
                    item = self._queue.get()
                    if item is _STOP:
                        return
                    batch.append(item)
                    stopping = self._gather(batch)
                try:
                    self._write_batch(batch)
                except psycopg.Error as exc:  # transient: see _transient
                    if self._give_up.is_set():
                        logger.warning(
                            "workhorse writer: database error at a forced stop, %s finished "
                            "run(s) not written (their leases expire and they run again): %s",
                            len(batch),
                            exc,
                        )
                        return
                    delay = next(delays)
                    logger.warning(
                        "workhorse writer: database error (%s); %s finished run(s) are "
                        "written again on a new connection in %.1f s",
                        exc,
                        len(batch),
                        delay,
                    )
                    self._close()
                    self._again = True
                    self._give_up.wait(delay)
                    continue
                self._again = False
                delays = retry_delays()
                batch = []
                instruments.observe_runs()
        except BaseException as exc:  # a bug, not the database: the worker must stop
            logger.exception("workhorse writer: stopped by an unexpected error")
            self.on_error(exc)
        finally:
            self._close(ending=True)
            instruments.observe_runs()

    def _gather(self, batch: list[Finished]) -> bool:
        """Add to ``batch`` what is queued, lingering for the runs still
        going. True when the stop marker was met."""
        pending = self.in_flight()
        if pending > 0:
            self._linger.wait(pending, self._queue.qsize)
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return False
            if item is _STOP:
                return True
            batch.append(item)

    def _own_attempt(self, running: Running, outcomes: frozenset[str]) -> store.AttemptRow | None:
        """In a batch written again, the attempt row that ``running``'s own
        earlier write left (its attempt, closed under its owner name with one
        of ``outcomes``): that write committed, and only its reply was lost."""
        if not self._again:
            return None
        with self._cursor() as cursor:
            attempts = store.get_attempts(cursor, running.job.job_id)
        for row in reversed(attempts):
            if (
                row.attempt == running.job.attempt
                and row.worker_id == running.owner
                and row.outcome in outcomes
            ):
                return row
        return None

    def _snapshot(self, running: Running) -> dict[str, Any]:
        with self._cursor() as cursor:
            return store.get_job(cursor, running.job.job_id) or {}

    def _recorded_failure(
        self, closing: Closing, own: store.AttemptRow
    ) -> tuple[store.FailResult, Recorded]:
        """What ``workhorse_fail_many_v1`` decided for a failure whose reply
        was lost, read back from the job as it is now."""
        running = closing.running
        job = running.job
        if own.outcome == "canceled":
            with self._cursor() as cursor:
                reason = stored_reason(cursor, job.job_id)
            result = store.FailResult(
                job.job_id, True, False, None, None, job.attempt, job.max_attempts, True, reason
            )
        else:
            snapshot = self._snapshot(running)
            state = snapshot.get("state")
            current = snapshot.get("current_attempt") or 0
            will_retry = state not in ENDED or current > job.attempt
            run_at = snapshot.get("run_at") if current == job.attempt else None
            retry_in = (run_at - own.finished_at).total_seconds() if run_at is not None else None
            result = store.FailResult(
                job.job_id, True, will_retry, run_at, retry_in, job.attempt, job.max_attempts
            )
        return result, recorded_failure(closing, result)

    def _cursor(self) -> contextlib.AbstractContextManager[psycopg.Cursor]:
        """A cursor on the writer's connection, held for the block."""
        return self._shared.cursor()

    def _close(self, *, ending: bool = False) -> None:
        """Drop the connection after an error; at the end, only one of its own."""
        if self._owns_connection or not ending:
            self._shared.close()

    # -- one batch ------------------------------------------------------------

    def _write_batch(self, batch: list[Finished]) -> None:
        """Write ``batch``, one owner's runs at a time. A transient error (the
        connection, a deadlock) is raised for the caller to write again what
        is left in ``batch``; the owners already written are taken out."""
        while batch:
            owner = batch[0].running.owner
            group = [item for item in batch if item.running.owner == owner]
            self._write_group(owner, group)
            batch[:] = [item for item in batch if item.running.owner != owner]

    def _write_group(self, owner: str, batch: list[Finished]) -> None:
        """Write the runs of one owner. If the database refuses a value in
        them, they are written one by one so that only the culprit is hurt."""
        refusal = self._refusal(owner, batch)
        if refusal is None:
            return
        if len(batch) == 1:
            self._write_alone(owner, batch[0], refusal)
            return
        for item in batch:
            self._write_alone(owner, item)

    def _transient(self, exc: psycopg.Error) -> bool:
        """Worth writing again as it is: a lost or broken connection, a
        serialization failure or deadlock, a server short of resources or
        shutting down. Not so: a value the database refuses (data, limits)."""
        if self._shared.broken:
            return True
        state = exc.sqlstate or ""
        return not state or state[:2] in TRANSIENT_CLASSES

    def _refusal(self, owner: str, batch: list[Finished]) -> psycopg.Error | None:
        """Write ``batch``: None once written, the error if the database
        refused it; a transient error is raised."""
        try:
            self._write(owner, batch)
        except psycopg.Error as exc:
            if self._transient(exc):
                raise
            return exc
        return None

    def _write_alone(
        self, owner: str, item: Finished, refusal: psycopg.Error | None = None
    ) -> None:
        """One run of a refused batch, written alone (unless ``refusal`` says
        the database already refused it alone).

        If the database refuses it, a result (too large, say) becomes a
        failed attempt, without retry, with the database's reason; if even
        that cannot be written, the run is dropped and its job runs again
        once its lease expires.
        """
        if refusal is None:
            refusal = self._refusal(owner, [item])
            if refusal is None:
                return
        if item.ok:
            refusal = self._refusal(owner, [refused_by_database(item, refusal)])
            if refusal is None:
                return
        job = item.running.job
        logger.error(
            "workhorse writer: the database refused to record job %s #%s (%s); its lease "
            "expires and it runs again",
            job.name,
            job.job_id,
            str(refusal).strip(),
            extra=job_extra(job.job_id, job.queue, job.attempt, job.name),
        )
        self.reporter.dropped(item.running)
        self.on_written([item.running])

    def _write(self, owner: str, batch: list[Finished]) -> None:
        successes: list[Closing] = []
        failures: list[Closing] = []
        sleeps: list[Closing] = []
        for item in batch:
            closing = close(item)
            outcome = closing.outcome
            if outcome == SUCCEEDED:
                successes.append(closing)
            elif outcome == SLEPT:
                sleeps.append(closing)
            else:
                failures.append(closing)
        # One call is its own transaction (autocommit); two or three share one.
        several = (bool(successes) + bool(failures) + bool(sleeps)) > 1
        with (
            self._shared.use() as conn,
            conn.cursor() as cursor,
            conn.transaction() if several else contextlib.nullcontext(),
        ):
            if several:
                # Each call locks its own runs in job_id order, but one after
                # the other they would not: the whole batch first, in one
                # pass, so that a heartbeat or an idle worker's look-up (both
                # in job_id order) cannot close a deadlock with this batch.
                jobs = [c.running.job for c in (*sleeps, *successes, *failures)]
                store.lock_runs(cursor, owner, [j.job_id for j in jobs], [j.fence for j in jobs])
            if sleeps:
                requests = [cast(SleepRequested, c.item.error) for c in sleeps]
                slept = store.sleep_many(
                    cursor,
                    owner,
                    [c.running.job.job_id for c in sleeps],
                    [c.running.job.fence for c in sleeps],
                    [r.name for r in requests],
                    [r.wake_at for r in requests],
                    [r.delay for r in requests],
                )
            if successes:
                succeeded = store.succeed_many(
                    cursor,
                    owner,
                    [c.running.job.job_id for c in successes],
                    [c.running.job.fence for c in successes],
                    [c.encoded for c in successes],
                )
            if failures:
                failed = store.fail_many(
                    cursor,
                    owner,
                    [c.running.job.job_id for c in failures],
                    [c.running.job.fence for c in failures],
                    [c.error_json() for c in failures],
                    [c.outcome for c in failures],
                    [c.retryable for c in failures],
                    [c.delay for c in failures],
                )
        report = self.reporter.report
        if sleeps:
            for (_job_id, ok, run_at, was_canceled), closing in zip(slept, sleeps, strict=True):
                if ok and was_canceled:
                    # Its cancel was requested and not yet heard here: the
                    # sleep ended it canceled (workhorse_sleep_many_v1).
                    with self._cursor() as cursor:
                        reason = stored_reason(cursor, closing.running.job.job_id)
                    report(closing, Recorded(CANCELED, reason=reason))
                elif ok:
                    report(closing, Recorded(SLEPT, run_at=run_at))
                elif self._own_attempt(closing.running, SLEPT_OUTCOMES) is not None:
                    snapshot = self._snapshot(closing.running)
                    report(closing, Recorded(SLEPT, run_at=snapshot.get("run_at")))
                else:
                    report(closing, None)
        if successes:
            # A written success has nothing to report (its after-recorded
            # call is handed WRITTEN_SUCCESS): only a refused one is looked at.
            for i, ((job_id, ok), closing) in enumerate(zip(succeeded, successes, strict=True)):
                if ok:
                    continue
                if self._own_attempt(closing.running, SUCCEEDED_OUTCOMES) is not None:
                    succeeded[i] = (job_id, True)
                else:
                    report(closing, None)
            instruments.count_successes(successes, succeeded)
        if failures:
            for i, (result, closing) in enumerate(zip(failed, failures, strict=True)):
                if not result.ok:
                    own = self._own_attempt(closing.running, FAILED_OUTCOMES)
                    if own is None:
                        report(closing, None)
                        continue
                    result, recorded = self._recorded_failure(closing, own)
                    failed[i] = result
                else:
                    recorded = recorded_failure(closing, result)
                report(closing, recorded)
            instruments.count_failures(failures, failed)
        self.on_written([item.running for item in batch])
