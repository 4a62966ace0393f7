"""The writer thread: records finished runs in batches, from its own connection.

A handler's slot is free as soon as it returns; its result waits here for the
next batch. Each batch is one transaction of at most two SQL calls
(``succeed_many`` and ``fail_many``), whatever its size, so the claim loop
never waits on a finish and the database works on the finishes while Python
starts the next jobs. Until its write lands a run keeps its lease: the
heartbeat renews it with the running ones.

A batch whose transaction fails on a lost connection (or a deadlock, or a
server shutting down) is kept and written again on a new one: nothing of a
rolled-back transaction reached the database. A value the database refuses
to store fails only its own run's attempt. Any other error stops the writer
and is handed to the worker, which stops.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable

import psycopg
from django.db import close_old_connections

from .. import store
from ..exceptions import InvalidPayloadError, JobCancelled
from ..payloads import encode_result
from . import instruments
from .connection import connect, retry_delays
from .execution import Finished, Running
from .failures import JobFailure, error_json
from .logs import job_extra

logger = logging.getLogger("django_workhorse.worker")

LINGER = 0.002
"""Seconds a batch waits for the runs still going before it is written."""

_STOP = object()

TRANSIENT_CLASSES = frozenset({"08", "40", "53", "57"})
"""SQLSTATE classes a batch is written again after: connection exception,
transaction rollback (serialization failure, deadlock), insufficient
resources, operator intervention (shutdown, cancel)."""

Failure = tuple[Finished, str, bool, float | None, BaseException]


class Writer(threading.Thread):
    """Writes ``Finished`` runs handed over with ``put``; ``stop`` flushes and ends it.

    ``in_flight`` tells how many runs are still going: a batch waits up to
    LINGER for them, so a burst of short jobs is one transaction, not one per
    job. ``on_written`` gets the runs of a batch once its write has landed
    (or been refused by the fence); ``on_idle`` when everything handed over is written;
    ``on_error`` if the writer dies. Once ``give_up`` is set a lost
    connection is no longer retried: a forced stop leaves the unwritten runs
    to lease expiry.
    """

    def __init__(
        self,
        *,
        alias: str,
        worker_id: str,
        hook: Callable[[JobFailure], object] | None,
        in_flight: Callable[[], int],
        on_written: Callable[[list[Running]], None],
        on_error: Callable[[BaseException], None],
        on_idle: Callable[[], None],
        give_up: threading.Event,
    ) -> None:
        super().__init__(name="workhorse-writer", daemon=True)
        self.alias = alias
        self.worker_id = worker_id
        self.hook = hook
        self.in_flight = in_flight
        self.on_written = on_written
        self.on_error = on_error
        self.on_idle = on_idle
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._more = threading.Event()
        self._flush_at = 1
        self._busy = 0  # runs handed over and not yet written
        self._lock = threading.Lock()
        self._give_up = give_up  # set: stop retrying a lost connection (a forced stop)
        self._conn: psycopg.Connection | None = None

    # -- from other threads -------------------------------------------------

    def put(self, item: Finished) -> None:
        with self._lock:
            self._busy += 1
        self._queue.put(item)
        if self._queue.qsize() >= self._flush_at and not self._more.is_set():
            self._more.set()

    def idle(self) -> bool:
        """True when every run handed over so far is written."""
        return self._busy == 0

    def stop(self) -> None:
        """Write what was handed over, then end.

        Waits as long as that takes (a database that cannot be reached is
        retried) until ``give_up`` is set; then waits one more second for a
        write under way and returns, leaving what is unwritten to lease
        expiry.
        """
        self._queue.put(_STOP)
        self._more.set()
        while self.is_alive() and not self._give_up.is_set():
            self.join(0.1)
        self.join(1.0)
        if self.is_alive():
            logger.warning(
                "workhorse writer: still writing at a forced stop; %s finished run(s) may not "
                "be written (their leases expire and they run again)",
                self._busy,
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
                    self._give_up.wait(delay)
                    continue
                delays = retry_delays()
                with self._lock:
                    self._busy -= len(batch)
                    idle = self._busy == 0
                batch = []
                if idle:
                    self.on_idle()
        except BaseException as exc:  # a bug, not the database: the worker must stop
            logger.exception("workhorse writer: stopped by an unexpected error")
            self.on_error(exc)
        finally:
            self._close()

    def _gather(self, batch: list[Finished]) -> bool:
        """Add to ``batch`` what is queued, waiting up to LINGER for the runs
        still going. True when the stop marker was met."""
        pending = self.in_flight()
        if pending > 0:
            self._flush_at = pending
            self._more.clear()
            if self._queue.qsize() < pending:
                self._more.wait(LINGER)
            self._flush_at = 1
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return False
            if item is _STOP:
                return True
            batch.append(item)

    def _cursor(self) -> psycopg.Cursor:
        if self._conn is None or self._conn.closed:
            self._conn = connect(self.alias, application_name="workhorse-writer")
        return self._conn.cursor()

    def _close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None

    # -- one batch ------------------------------------------------------------

    def _write_batch(self, batch: list[Finished]) -> None:
        """Write ``batch``. A transient error (the connection, a deadlock) is
        raised for the caller to write it again; if the database refuses a
        value in it, its runs are written one by one so that only the culprit
        is hurt."""
        refusal = self._refusal(batch)
        if refusal is None:
            return
        if len(batch) == 1:
            self._write_alone(batch[0], refusal)
            return
        for item in batch:
            self._write_alone(item)

    def _transient(self, exc: psycopg.Error) -> bool:
        """Worth writing again as it is: a lost or broken connection, a
        serialization failure or deadlock, a server short of resources or
        shutting down. Not so: a value the database refuses (data, limits)."""
        if self._conn is None or self._conn.broken or self._conn.closed:
            return True
        state = exc.sqlstate or ""
        return not state or state[:2] in TRANSIENT_CLASSES

    def _refusal(self, batch: list[Finished]) -> psycopg.Error | None:
        """Write ``batch``: None once written, the error if the database
        refused it; a transient error is raised."""
        try:
            self._write(batch)
        except psycopg.Error as exc:
            if self._transient(exc):
                raise
            return exc
        return None

    def _write_alone(self, item: Finished, refusal: psycopg.Error | None = None) -> None:
        """One run of a refused batch, written alone (unless ``refusal`` says
        the database already refused it alone).

        If the database refuses it, a result (too large, say) becomes a
        failed attempt, without retry, with the database's reason; if even
        that cannot be written, the run is dropped and its job runs again
        once its lease expires.
        """
        if refusal is None:
            refusal = self._refusal([item])
            if refusal is None:
                return
        running = item.running
        job = running.job
        if item.ok:
            error = InvalidPayloadError(
                f"the database refused to store the result of job {job.name!r}: "
                f"{str(refusal).strip()}; return something smaller or simpler"
            )
            error.__workhorse_retry__ = False
            running.kind = "failed"
            failed = Finished(running, False, error=error, abandoned=item.abandoned)
            refusal = self._refusal([failed])
            if refusal is None:
                return
        logger.error(
            "workhorse writer: the database refused to record job %s #%s (%s); its lease "
            "expires and it runs again",
            job.name,
            job.job_id,
            str(refusal).strip(),
            extra=job_extra(job.job_id, job.queue, job.attempt),
        )
        self.on_written([running])

    def _write(self, batch: list[Finished]) -> None:
        successes: list[Finished] = []
        failures: list[Failure] = []
        for item in batch:
            if item.ok:
                try:
                    if item.encoded is None:
                        item.encoded = encode_result(item.value)
                    successes.append(item)
                    continue
                except InvalidPayloadError as exc:
                    item.ok, item.error = False, exc
                    exc.__workhorse_retry__ = False
            failures.append(classify(item))
        cursor = self._cursor()
        # One call is its own transaction (autocommit); two share one.
        both = successes and failures
        with cursor, self._conn.transaction() if both else contextlib.nullcontext():
            if successes:
                succeeded = store.succeed_many(
                    cursor,
                    self.worker_id,
                    [f.running.job.job_id for f in successes],
                    [f.running.job.fence for f in successes],
                    [f.encoded for f in successes],
                )
            if failures:
                failed = store.fail_many(
                    cursor,
                    self.worker_id,
                    [f[0].running.job.job_id for f in failures],
                    [f[0].running.job.fence for f in failures],
                    [error_json(f[4]) for f in failures],
                    [f[1] for f in failures],
                    [f[2] for f in failures],
                    [f[3] for f in failures],
                )
        self.on_written([item.running for item in batch])
        if successes:
            for (_job_id, ok), item in zip(succeeded, successes, strict=True):
                if not ok:
                    report_lost(item.running, "success")
            instruments.count_successes(successes, succeeded)
        if failures:
            for result, failure in zip(failed, failures, strict=True):
                self._after_failure(result, failure)
            instruments.count_failures(failures, failed)
            if self.hook is not None:
                # A hook may use the ORM on this thread: treat its calls as
                # one request and let Django close what it opened.
                close_old_connections()

    def _after_failure(self, result: store.FailResult, failure: Failure) -> None:
        item, kind, _retryable, _delay, exc = failure
        running = item.running
        if not result.ok:
            report_lost(running, "failure")
            return
        log_failure(running, result, kind, exc)
        self._call_hook(running, result, kind, exc)

    def _call_hook(self, running: Running, result: store.FailResult, kind: str, exc) -> None:
        if self.hook is None:
            return
        job = running.job
        try:
            self.hook(
                JobFailure(
                    job_id=job.job_id,
                    name=job.name,
                    queue=job.queue,
                    attempt=job.attempt,
                    max_attempts=job.max_attempts,
                    will_retry=result.will_retry,
                    exception=exc,
                    timed_out=kind == "timed_out",
                )
            )
        except Exception:
            logger.exception(
                "workhorse: on_job_failure hook raised for job %s; processing goes on",
                job.job_id,
                extra=job_extra(job.job_id, job.queue, job.attempt),
            )


def classify(item: Finished) -> Failure:
    """How a failed run closes: its kind, whether it may retry, and the delay."""
    exc = item.error
    running = item.running
    definition = running.definition
    retryable = getattr(exc, "__workhorse_retry__", True)
    if isinstance(exc, JobCancelled):
        retryable = False
    if definition is not None and retryable:
        retryable = definition.should_retry(exc)
    delay = None
    if definition is not None and retryable:
        try:
            delay = definition.retry_delay(running.job.attempt)
        except Exception as hook_exc:
            logger.error("workhorse: backoff callable of %s failed: %s", definition.name, hook_exc)
    return (item, running.kind, retryable, delay, exc)


def log_failure(running: Running, result: store.FailResult, kind: str, exc) -> None:
    """A warning while retries remain (with the delay), an error when terminal."""
    job = running.job
    extra = job_extra(job.job_id, job.queue, job.attempt)
    if result.will_retry:
        logger.warning(
            "job %s %s #%s attempt %s/%s %s: %s: %s; retrying in %.1f s",
            job.name,
            job.queue,
            job.job_id,
            job.attempt,
            job.max_attempts,
            kind.replace("_", " "),
            type(exc).__name__,
            exc,
            max(0.0, result.retry_in or 0.0),
            extra=extra,
        )
    else:
        logger.error(
            "job %s %s #%s failed at attempt %s/%s: %s: %s",
            job.name,
            job.queue,
            job.job_id,
            job.attempt,
            job.max_attempts,
            type(exc).__name__,
            exc,
            extra=extra,
            exc_info=(type(exc), exc, exc.__traceback__),
        )


def report_lost(running: Running, what: str) -> None:
    job = running.job
    logger.warning(
        "job %s #%s: lease lost (fence %s); its %s was refused, another run owns the job",
        job.name,
        job.job_id,
        job.fence,
        what,
        extra=job_extra(job.job_id, job.queue, job.attempt),
    )
