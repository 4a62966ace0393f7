"""The Worker: one claim loop feeding handler slots, with batched writes.

The loop, in one thread, repeats: write the runs that finished since last time
(one ``succeed_many`` and one ``fail_many`` call for all of them), fail the
runs whose timeout passed, then fill every free slot with one ``claim_many``
call. When there is nothing to do it waits for a NOTIFY, a finished run, or a
timer capped at ``poll_interval`` and shortened to the next known run_at.
Claims and finishes are single SQL calls, so a shutdown never interrupts
one half-way.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import socket
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from secrets import token_hex

import psycopg
from django.core.exceptions import ImproperlyConfigured

from .. import registry, store
from ..conf import QUEUE_NAME_RE, WorkhorseSettings, get_settings, import_callable
from ..context import JobContext
from ..definitions import JobDefinition
from ..exceptions import (
    InvalidPayloadError,
    JobCancelled,
    SchemaVersionError,
    StoreMismatchError,
    UnknownJobError,
)
from ..payloads import encode_result
from .connection import connect
from .execution import AsyncSlots, Finished, JobTimeout, Running, SyncSlots
from .failures import JobFailure, error_json
from .heartbeat import Heartbeat
from .logs import install_record_factory, job_extra
from .wakeups import Listener

logger = logging.getLogger("django_workhorse.worker")

FLUSH_LINGER = 0.002
"""Seconds the loop waits for more runs to finish before writing a batch."""


@dataclass
class WorkerOptions:
    """What one worker process does; built from settings and ``runworker`` flags."""

    alias: str
    queues: list[str]
    concurrency: dict[str, int]
    worker_id: str
    settings: WorkhorseSettings
    burst: bool = False
    on_job_failure: str | None = None


def make_worker_id(base: str | None = None) -> str:
    """Unique per process run: ``<base or host>:<pid>:<random>``."""
    return f"{base or socket.gethostname()}:{os.getpid()}:{token_hex(3)}"


def known_queues(alias: str, settings: WorkhorseSettings) -> list[str]:
    """Queues with a registered job bound to ``alias``, plus those named in QUEUES."""
    names = {d.queue for d in registry.all_jobs().values() if d.using == alias}
    names.update(settings.queues)
    return sorted(names)


def resolve_options(
    *,
    alias: str | None = None,
    queues: Sequence[str] | None = None,
    concurrency: int | None = None,
    worker_id: str | None = None,
    burst: bool = False,
    settings: WorkhorseSettings | None = None,
) -> WorkerOptions:
    """Check the worker's choices against the registry and settings.

    Raises ImproperlyConfigured (unknown queue, bad alias) or StoreMismatchError
    (a job of a served queue is bound to another alias) with a message that
    says what to change.
    """
    settings = settings or get_settings()
    alias = alias or settings.database
    from django.db import connections

    if alias not in connections.databases:
        raise ImproperlyConfigured(
            f"database {alias!r} is not an alias of settings.DATABASES "
            f"({', '.join(connections.databases)})"
        )
    available = known_queues(alias, settings)
    if queues:
        for name in queues:
            if not QUEUE_NAME_RE.match(name):
                raise ImproperlyConfigured(f"queue name {name!r} is not valid")
        unknown = [q for q in queues if q not in available]
        if unknown:
            raise ImproperlyConfigured(
                f"unknown queue(s) {', '.join(unknown)}: no job registered for database "
                f"{alias!r} uses them and WORKHORSE['QUEUES'] does not name them "
                f"(known: {', '.join(available) or 'none'})"
            )
        served = list(dict.fromkeys(queues))
    else:
        served = available
    if not served:
        raise ImproperlyConfigured(
            f"no queues to serve for database {alias!r}: register jobs with @workhorse.job "
            "in an app's jobs.py, or name queues in WORKHORSE['QUEUES']"
        )
    for definition in registry.all_jobs().values():
        check_store(definition, alias, served)
    default = concurrency if concurrency is not None else settings.concurrency
    slots: dict[str, int] = {}
    for name in served:
        configured = settings.queues.get(name, {}).get("concurrency")
        from_job = next(
            (
                d.concurrency
                for d in registry.all_jobs().values()
                if d.queue == name and d.concurrency is not None
            ),
            None,
        )
        slots[name] = configured or from_job or default or 1
    if settings.on_job_failure:
        import_callable(settings.on_job_failure)  # refuse a bad path before starting
    return WorkerOptions(
        alias=alias,
        queues=served,
        concurrency=slots,
        worker_id=make_worker_id(worker_id or settings.worker_id),
        settings=settings,
        burst=burst,
        on_job_failure=settings.on_job_failure,
    )


def check_store(definition: JobDefinition, alias: str, served: Iterable[str]) -> None:
    """A job of a queue this worker serves must live in the worker's database."""
    if definition.queue in served and definition.using != alias:
        raise StoreMismatchError(
            f"job {definition.name!r} is bound to database {definition.using!r} but this "
            f"worker serves queue {definition.queue!r} on database {alias!r}: run a worker "
            f"with --database {definition.using}, or move the job to another queue"
        )


class Worker:
    """Claims and runs jobs until stopped. Tests drive it directly; ``runworker``
    wraps it. ``run()`` returns the process exit code."""

    def __init__(self, options: WorkerOptions) -> None:
        self.options = options
        self.settings = options.settings
        self.worker_id = options.worker_id
        self.running: dict[int, Running] = {}
        self._lock = threading.Lock()
        self._finished: queue.SimpleQueue[Finished] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._forced = threading.Event()
        self._stop_deadline: float | None = None
        self._next_due: float | None = None  # epoch seconds, from NOTIFY payloads
        self._flush_at = 1  # finished runs that wake the loop (see _collect)
        self._signals = 0
        self._unwritten: list[Finished] = []
        self._conn: psycopg.Connection | None = None
        self._sync: dict[str, SyncSlots] = {}
        self._async: AsyncSlots | None = None
        self._listener: Listener | None = None
        self._heartbeat: Heartbeat | None = None
        self._hook = import_callable(options.on_job_failure) if options.on_job_failure else None
        self._definitions = registry.all_jobs()
        self.processed = 0

    # -- control -----------------------------------------------------------

    def request_stop(self) -> None:
        """Begin a graceful stop (first signal); a second call forces it."""
        if self._stopping.is_set():
            self._forced.set()
        else:
            self._stop_deadline = time.monotonic() + self.settings.shutdown_grace
            self._stopping.set()
        self._wake.set()

    def install_signal_handlers(self) -> None:
        """SIGTERM/SIGINT: the first drains gracefully, the second forces.

        The handler runs on the main thread between two bytecodes, possibly
        while that thread holds the wake-up event's lock, so it only counts
        the signal and hands the rest to a new thread.
        """

        def handle(signum, frame) -> None:
            self._signals += 1
            threading.Thread(
                target=self._on_signal, args=(signum, self._signals), daemon=True
            ).start()

        signal.signal(signal.SIGTERM, handle)
        signal.signal(signal.SIGINT, handle)

    def _on_signal(self, signum: int, count: int) -> None:
        name = signal.Signals(signum).name
        if count == 1:
            logger.warning(
                "workhorse: %s received, finishing running jobs (up to %.0f s; "
                "send it again to stop now)",
                name,
                self.settings.shutdown_grace,
            )
            self.request_stop()
        else:
            logger.warning("workhorse: second %s, stopping now", name)
            self._stopping.set()
            self._forced.set()
            self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    # -- lifecycle ---------------------------------------------------------

    def run(self) -> int:
        install_record_factory()
        self._conn = connect(self.options.alias, application_name="workhorse-worker")
        with self._conn.cursor() as cursor:
            problem = store.schema_problem(store.schema_version(cursor))
            if problem:
                raise SchemaVersionError(f"database {self.options.alias!r}: {problem}")
            store.ensure_partitions(cursor, self.settings.partition_days_ahead)
        self._start_threads()
        registry.on_register(self._on_register)
        logger.info(
            "workhorse worker %s serving %s on database %r",
            self.worker_id,
            ", ".join(f"{q}({n})" for q, n in self.options.concurrency.items()),
            self.options.alias,
        )
        try:
            self._loop()
        finally:
            registry.remove_listener(self._on_register)
            self._shutdown()
        return 1 if self._forced.is_set() else 0

    def _start_threads(self) -> None:
        def done(finished: Finished) -> None:
            self._finished.put(finished)
            if self._finished.qsize() >= self._flush_at:
                self._wake.set()

        needs_async = any(
            d.is_async for d in self._definitions.values() if d.queue in self.options.queues
        )
        for name, count in self.options.concurrency.items():
            self._sync[name] = SyncSlots(count, done, f"workhorse-{name}")
        if needs_async:
            self._async = AsyncSlots(done, "workhorse")
        self._listener = Listener(
            alias=self.options.alias,
            queues=self.options.queues,
            on_ready=self._wake.set,
            on_due=self._on_due,
        )
        self._listener.start()
        self._heartbeat = Heartbeat(
            alias=self.options.alias,
            worker_id=self.worker_id,
            lease_seconds=self.settings.lock_duration,
            renew_interval=self.settings.lock_renew_interval,
            stalled_interval=self.settings.stalled_interval,
            partition_days_ahead=self.settings.partition_days_ahead,
            in_flight=self._leases,
            on_lost=self._on_lost,
            on_cancel=self._on_cancel,
            on_recovered=self._on_recovered,
        )
        self._heartbeat.start()
        self._listener.self_test_done.wait(3.0)
        if not self._listener.delivering.is_set():
            logger.warning(
                "workhorse: NOTIFY is not delivered on database %r (a transaction-mode "
                "pooler?); polling every %.1f s instead",
                self.options.alias,
                self.settings.poll_interval,
            )

    def _loop(self) -> None:
        while True:
            try:
                if self._pass():
                    return
            except psycopg.OperationalError as exc:
                if self._stopping.is_set() and not self.running:
                    return
                logger.warning(
                    "workhorse: database error (%s); the pass was rolled back and is retried "
                    "on a new connection",
                    exc,
                )
                self._reconnect()

    def _reconnect(self) -> None:
        with contextlib.suppress(psycopg.Error):
            self._conn.close()
        delay = 0.5
        while not self._forced.is_set():
            try:
                self._conn = connect(self.options.alias, application_name="workhorse-worker")
                return
            except psycopg.OperationalError as exc:
                logger.warning("workhorse: cannot reconnect (%s); retrying in %.1f s", exc, delay)
                self._forced.wait(delay)
                delay = min(delay * 2, 10.0)

    def _pass(self) -> bool:
        """One pass of the claim loop; True when the loop should end."""
        self._wake.clear()
        # Runs whose write was rolled back (a lost connection) are kept and
        # written again: nothing of that transaction reached the database.
        finished = self._unwritten + self._collect()
        finished.extend(self._expire_timeouts())
        self._unwritten = finished
        if self._forced.is_set():
            self._write(finished, claim=False)
            self._unwritten = []
            return True
        if self._stopping.is_set():
            self._write(finished, claim=False)
            self._unwritten = []
            if not self.running or time.monotonic() >= (self._stop_deadline or 0):
                return True
            self._wake.wait(0.05)
            return False
        claimed = self._write(finished, claim=True)
        self._unwritten = []
        if claimed or finished:
            return False
        if self.options.burst and not self.running and self._finished.empty():
            return True
        self._wake.wait(self._idle_timeout())
        return False

    def _collect(self) -> list[Finished]:
        """The runs that finished, gathered so that they are written together.

        After the first one, wait up to FLUSH_LINGER for the others still
        running, waking early once they all are done: a burst of short jobs
        is written in one call instead of one call per job.
        """
        finished = self._drain()
        if finished:
            pending = len(self.running) - len(finished)
            if pending > 0:
                self._flush_at = pending
                self._wake.clear()
                if self._finished.qsize() < pending:
                    self._wake.wait(FLUSH_LINGER)
                self._flush_at = 1
                finished.extend(self._drain())
        return finished

    def _drain(self) -> list[Finished]:
        items: list[Finished] = []
        while True:
            try:
                items.append(self._finished.get_nowait())
            except queue.Empty:
                return items

    def _idle_timeout(self) -> float:
        timeout = self.settings.poll_interval
        if self._has_free_slots():
            due = self._next_due
            if due is None:
                with self._conn.cursor() as cursor:
                    next_at = store.next_run_at(cursor, self.options.queues)
                due = next_at.timestamp() if next_at else None
                self._next_due = due
            if due is not None:
                # A due time already past (rows locked by another worker's
                # claim) is retried shortly, never in a busy loop.
                timeout = min(timeout, max(0.01, due - time.time() + 0.001))
        if self.running:
            nearest = min(
                (r.deadline for r in self.running.values() if r.deadline and not r.timed_out),
                default=None,
            )
            if nearest is not None:
                timeout = min(timeout, max(0.0, nearest - time.monotonic()))
        return timeout

    def _on_due(self, epoch: float) -> None:
        if self._next_due is None or epoch < self._next_due:
            self._next_due = epoch
        self._wake.set()

    def _on_register(self, definition: JobDefinition) -> None:
        check_store(definition, self.options.alias, self.options.queues)
        self._definitions = registry.all_jobs()
        self._wake.set()

    # -- claim -------------------------------------------------------------

    def _free_slots(self, ignore: set[int] | frozenset[int] = frozenset()) -> dict[str, int]:
        busy: dict[str, int] = {}
        for job_id, running in self.running.items():
            if job_id not in ignore:
                busy[running.job.queue] = busy.get(running.job.queue, 0) + 1
        return {
            name: count - busy.get(name, 0)
            for name, count in self.options.concurrency.items()
            if count - busy.get(name, 0) > 0
        }

    def _has_free_slots(self) -> bool:
        return bool(self._free_slots())

    def _start(self, job: store.ClaimedJob, now: float) -> None:
        definition = self._definitions.get(job.name)
        context = JobContext(
            job_id=job.job_id,
            name=job.name,
            queue=job.queue,
            attempt=job.attempt,
            max_attempts=job.max_attempts,
            worker_id=self.worker_id,
            using=self.options.alias,
        )
        running = Running(job, definition, context, now)
        if job.timeout:
            running.deadline = now + job.timeout
        with self._lock:
            self.running[job.job_id] = running
        if job.cancel_requested:
            context._cancelled.set()
        if definition is None:
            error = UnknownJobError(
                f"no job named {job.name!r} is registered in worker {self.worker_id}; deploy "
                "the code that defines it (the attempt is retried with backoff)"
            )
            self._finished.put(Finished(running, False, error=error))
            return
        try:
            definition.check_payload(job.payload)
        except InvalidPayloadError as exc:
            error = InvalidPayloadError(
                f"{exc}; the payload no longer fits the handler, fix the handler or the job"
            )
            error.__workhorse_retry__ = False
            self._finished.put(Finished(running, False, error=error))
            return
        if definition.is_async:
            self._async.submit(running)
        else:
            self._sync[job.queue].submit(running)

    # -- finish ------------------------------------------------------------

    def _write(self, finished: list[Finished], *, claim: bool) -> int:
        """Record ``finished`` and fill the free slots, in one transaction.

        At most three SQL calls (succeed_many, fail_many, claim_many) and one
        commit per pass, whatever the number of jobs. Returns the jobs claimed.
        """
        successes: list[Finished] = []
        failures: list[tuple[Finished, str, bool, float | None, BaseException]] = []
        for item in finished:
            running = item.running
            if running.timed_out and not item.abandoned:
                # The attempt was already recorded as timed out; the thread is back.
                self._forget(running)
                continue
            if item.ok:
                try:
                    if item.encoded is None:
                        item.encoded = encode_result(item.value)
                    successes.append(item)
                    continue
                except InvalidPayloadError as exc:
                    item.ok, item.error = False, exc
                    exc.__workhorse_retry__ = False
            failures.append(self._failure(item))
        free: dict[str, int] = {}
        if claim:
            done = {item.running.job.job_id for item in finished if not item.abandoned}
            free = self._free_slots(ignore=done)
        if not (successes or failures or free):
            return 0
        jobs: list[store.ClaimedJob] = []
        with self._conn.transaction(), self._conn.cursor() as cursor:
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
            if free:
                jobs = store.claim_many(
                    cursor,
                    self.worker_id,
                    list(free),
                    list(free.values()),
                    self.settings.lock_duration,
                )
        if successes:
            for (_job_id, ok), item in zip(succeeded, successes, strict=True):
                if not ok:
                    self._report_lost(item.running, "success")
                self._forget(item.running)
        if failures:
            self._after_failures(failed, failures)
        self.processed += len(finished)
        if free and not jobs:
            self._next_due = None  # look the next run_at up again before sleeping
        now = time.monotonic()
        for job in jobs:
            self._start(job, now)
        return len(jobs)

    def _failure(self, item: Finished) -> tuple[Finished, str, bool, float | None, BaseException]:
        exc = item.error
        running = item.running
        kind = running.kind
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
                logger.error(
                    "workhorse: backoff callable of %s failed: %s", definition.name, hook_exc
                )
        return (item, kind, retryable, delay, exc)

    def _after_failures(self, rows: list[store.FailResult], failures) -> None:
        for result, (item, kind, _retryable, _delay, exc) in zip(rows, failures, strict=True):
            running = item.running
            if not item.abandoned:
                self._forget(running)
            if not result.ok:
                self._report_lost(running, "failure")
                continue
            self._log_failure(running, result, kind, exc)
            self._call_hook(running, result, kind, exc)

    def _log_failure(self, running: Running, result: store.FailResult, kind: str, exc) -> None:
        job = running.job
        extra = job_extra(job.job_id, job.queue, job.attempt)
        if result.will_retry:
            delay = result.retry_in or 0.0
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
                max(0.0, delay),
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

    def _call_hook(self, running: Running, result: store.FailResult, kind: str, exc) -> None:
        if self._hook is None:
            return
        job = running.job
        try:
            self._hook(
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

    def _report_lost(self, running: Running, what: str) -> None:
        job = running.job
        logger.warning(
            "job %s #%s: lease lost (fence %s); its %s was refused, another run owns the job",
            job.name,
            job.job_id,
            job.fence,
            what,
            extra=job_extra(job.job_id, job.queue, job.attempt),
        )

    def _forget(self, running: Running) -> None:
        with self._lock:
            if self.running.get(running.job.job_id) is running:
                del self.running[running.job.job_id]

    # -- timeouts, leases, cancels ----------------------------------------

    def _expire_timeouts(self) -> list[Finished]:
        """Failures for sync runs past their timeout, written with the next batch.

        Python cannot stop a thread: the attempt ends as timed out now, and
        the run stays in ``running`` (its slot busy) until the thread returns.
        Async runs are cancelled by their own timeout scope instead.
        """
        now = time.monotonic()
        expired: list[Finished] = []
        for running in list(self.running.values()):
            if running.deadline is None or now < running.deadline or running.timed_out:
                continue
            if running.definition is not None and running.definition.is_async:
                continue
            running.timed_out = True
            running.kind = "timed_out"
            exc = JobTimeout(
                f"the attempt ran longer than its timeout of {running.job.timeout} s; its "
                "thread is abandoned and the slot stays busy until it returns"
            )
            expired.append(Finished(running, False, error=exc, abandoned=True))
        return expired

    def _leases(self) -> list[tuple[int, int]]:
        with self._lock:
            return [
                (r.job.job_id, r.job.fence)
                for r in self.running.values()
                if not r.lease_lost and not r.timed_out
            ]

    def _on_lost(self, job_id: int) -> None:
        running = self.running.get(job_id)
        if running is None or running.lease_lost:
            return
        running.lease_lost = True
        job = running.job
        logger.warning(
            "job %s #%s: lease lost while running (heartbeat refused); the job may run twice",
            job.name,
            job.job_id,
            extra=job_extra(job.job_id, job.queue, job.attempt),
        )

    def _on_cancel(self, job_id: int) -> None:
        running = self.running.get(job_id)
        if running is None:
            return
        running.context._cancelled.set()
        if running.task is not None and self._async is not None:
            self._async.cancel(running)

    def _on_recovered(self, recovered: list[store.Recovered]) -> None:
        for item in recovered:
            logger.warning(
                "job #%s recovered from an expired lease (stall %s)%s",
                item.job_id,
                item.stall_count,
                "; failed: too many stalls" if item.failed else "",
                extra=job_extra(item.job_id, item.queue, item.attempt),
            )
        self._wake.set()

    # -- shutdown ----------------------------------------------------------

    def _shutdown(self) -> None:
        try:
            self._write(self._unwritten + self._drain(), claim=False)
            with self._lock:
                leftover = [r for r in self.running.values() if not r.timed_out]
            if leftover:
                with self._conn.cursor() as cursor:
                    rows = store.release_many(
                        cursor,
                        self.worker_id,
                        [r.job.job_id for r in leftover],
                        [r.job.fence for r in leftover],
                    )
                released = sum(1 for _, ok in rows if ok)
                logger.warning(
                    "workhorse: released %s running job(s) back to ready (no attempt used)",
                    released,
                )
                for running in leftover:
                    if running.task is not None and self._async is not None:
                        self._async.cancel(running)
                    self._forget(running)
        finally:
            if self._heartbeat:
                self._heartbeat.stop()
            if self._listener:
                self._listener.stop()
            for slots in self._sync.values():
                slots.close()
            if self._async:
                self._async.close()
            if self._conn is not None:
                self._conn.close()
            if self._heartbeat:
                self._heartbeat.join(2.0)
