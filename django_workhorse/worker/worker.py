"""The Worker: one claim loop feeding handler slots; a writer thread records results.

The loop, in one thread, repeats: fail the runs whose timeout passed, then
fill every free slot with one ``claim_many`` call. A slot is free as soon as
its handler returns; the result goes to the writer thread (``writer.py``),
which records a batch of them with one ``succeed_many`` and one ``fail_many``
call on its own connection while the loop claims and starts the next jobs.
When there is nothing to do the loop waits for a NOTIFY, a freed slot, or a
timer capped at ``poll_interval`` and shortened to the next known run_at.
Claims and finishes are single SQL calls, so a shutdown never interrupts
one half-way.
"""

from __future__ import annotations

import contextlib
import logging
import os
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
from ..conf import WorkhorseSettings, get_settings, import_callable
from ..context import JobContext
from ..definitions import JobDefinition
from ..exceptions import (
    InvalidPayloadError,
    SchemaVersionError,
    StoreMismatchError,
    UnknownJobError,
)
from ..limits import queue_name_problem
from .connection import connect, retry_delays
from .execution import AsyncSlots, Finished, JobTimeout, Running, SyncSlots
from .heartbeat import Heartbeat
from .logs import install_record_factory, job_extra
from .wakeups import Listener
from .writer import Writer

logger = logging.getLogger("django_workhorse.worker")

CLAIM_LINGER = 0.002
"""Seconds the loop waits for the runs still going once a slot frees, so that
a burst of short jobs refills its slots with one claim instead of many."""


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
            if problem := queue_name_problem(name):
                raise ImproperlyConfigured(problem)
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
    wraps it. ``run()`` returns the process exit code.

    ``running`` holds the live run of each job by id; ``writing`` the runs
    whose result the writer has not recorded yet. Both keep their leases
    renewed. ``_holding`` is every run that holds a slot: the running ones and
    timed-out sync runs whose thread has not returned (their attempt is
    recorded and their job may even run again here meanwhile). Handler threads
    move runs between these, so they change only under ``_lock``.
    """

    def __init__(self, options: WorkerOptions) -> None:
        self.options = options
        self.settings = options.settings
        self.worker_id = options.worker_id
        self.running: dict[int, Running] = {}
        self.writing: dict[int, Running] = {}
        self._holding: set[Running] = set()
        self._busy = dict.fromkeys(options.concurrency, 0)
        # Results waiting for the writer stop the claims at this many, so a
        # writer that cannot reach the database does not let them pile up.
        self._write_limit = sum(options.concurrency.values())
        self._freed = 0  # slots freed since the last claim
        self._claim_at = 1  # freed slots that end a linger (see _linger)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._more = threading.Event()  # set once _claim_at slots were freed
        self._stopping = threading.Event()
        self._forced = threading.Event()
        self._stop_deadline: float | None = None
        self._next_due: float | None = None  # epoch seconds, from NOTIFY payloads
        self._signals = 0
        self._writer_error: BaseException | None = None
        self._conn: psycopg.Connection | None = None
        self._sync: dict[str, SyncSlots] = {}
        self._async: AsyncSlots | None = None
        self._listener: Listener | None = None
        self._heartbeat: Heartbeat | None = None
        self._writer: Writer | None = None
        self._hook = import_callable(options.on_job_failure) if options.on_job_failure else None
        self._definitions = registry.all_jobs()

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
        self._conn = self._connect()
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
        needs_async = any(
            d.is_async for d in self._definitions.values() if d.queue in self.options.queues
        )
        for name, count in self.options.concurrency.items():
            self._sync[name] = SyncSlots(count, self._done, f"workhorse-{name}")
        if needs_async:
            self._async = AsyncSlots(self._done, "workhorse")
        self._writer = Writer(
            alias=self.options.alias,
            worker_id=self.worker_id,
            hook=self._hook,
            in_flight=lambda: len(self.running),
            on_written=self._written,
            on_error=self._on_writer_error,
            on_idle=self._wake.set,
            give_up=self._forced,
        )
        self._writer.start()
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
                    "workhorse: database error (%s); the claim was rolled back and is retried "
                    "on a new connection",
                    exc,
                )
                self._reconnect()

    def _connect(self) -> psycopg.Connection:
        # Claims need not wait for their WAL flush; finishes do (the writer).
        return connect(
            self.options.alias, application_name="workhorse-worker", wait_for_flush=False
        )

    def _reconnect(self) -> None:
        with contextlib.suppress(psycopg.Error):
            self._conn.close()
        # One warning per outage, one line when it ends; the tries between
        # (with a growing delay) are logged at DEBUG.
        started, tries = time.monotonic(), 0
        for delay in retry_delays():
            # The first SIGTERM ends the wait too: a stopping worker has no
            # more claims to make, and _pass ends the loop.
            if self._stopping.is_set():
                return
            try:
                self._conn = self._connect()
                if tries:
                    logger.warning(
                        "workhorse: reconnected after %.1f s (%s tries)",
                        time.monotonic() - started,
                        tries + 1,
                    )
                return
            except psycopg.OperationalError as exc:
                tries += 1
                log = logger.warning if tries == 1 else logger.debug
                log("workhorse: cannot reconnect (%s); retrying with backoff", str(exc).strip())
                self._stopping.wait(delay)

    def _pass(self) -> bool:
        """One pass of the claim loop; True when the loop should end."""
        self._wake.clear()
        if self._writer_error is not None:
            raise self._writer_error
        self._expire_timeouts()
        if self._forced.is_set():
            return True
        if self._stopping.is_set():
            if not self.running or time.monotonic() >= (self._stop_deadline or 0):
                return True
            self._wake.wait(0.05)
            return False
        # Nothing running and every result recorded: the claim below sees all
        # there is, so a burst worker that claims nothing is done.
        with self._lock:
            settled = not self._holding and not self.writing and self._writer.idle()
        free = self._linger()
        if self._stopping.is_set() or self._writer_error is not None:
            return False  # the next pass handles it
        if self._claim(free):
            return False
        if self.options.burst and settled:
            return True
        self._wake.wait(self._idle_timeout())
        return False

    def _linger(self) -> dict[str, int]:
        """The free slots per queue, after waiting up to CLAIM_LINGER for the
        runs still going once one has finished: a burst of short jobs then
        refills its slots with one claim."""
        with self._lock:
            freed, going = self._freed, len(self.running)
        if freed and going:
            self._claim_at = freed + going
            self._more.clear()
            if self._freed < self._claim_at:
                self._more.wait(CLAIM_LINGER)
            self._claim_at = 1
        with self._lock:
            self._freed = 0
            if len(self.writing) >= self._write_limit:
                return {}  # the writer is behind (a lost connection?): wait for it
            return {
                name: count - self._busy[name]
                for name, count in self.options.concurrency.items()
                if count > self._busy[name]
            }

    def _idle_timeout(self) -> float:
        timeout = self.settings.poll_interval
        with self._lock:
            has_free = any(
                count > self._busy[name] for name, count in self.options.concurrency.items()
            )
            # Async runs end by their own asyncio timeout; only sync ones
            # need the loop to wake and record theirs.
            deadlines = [
                r.deadline
                for r in self.running.values()
                if r.deadline and not (r.definition is not None and r.definition.is_async)
            ]
        if has_free:
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
        if deadlines:
            timeout = min(timeout, max(0.0, min(deadlines) - time.monotonic()))
        return timeout

    def _on_due(self, epoch: float) -> None:
        if self._next_due is None or epoch < self._next_due:
            self._next_due = epoch
        self._wake.set()

    def _on_register(self, definition: JobDefinition) -> None:
        check_store(definition, self.options.alias, self.options.queues)
        self._definitions = registry.all_jobs()
        self._wake.set()

    # -- claim and start ---------------------------------------------------

    def _claim(self, free: dict[str, int]) -> int:
        """Fill ``free`` slots with one ``claim_many`` call; the jobs claimed."""
        if not free:
            return 0
        with self._conn.cursor() as cursor:
            jobs = store.claim_many(
                cursor,
                self.worker_id,
                list(free),
                list(free.values()),
                self.settings.lock_duration,
            )
        if not jobs:
            self._next_due = None  # look the next run_at up again before sleeping
        now = time.monotonic()
        tasks: list[Running] = []
        threads: dict[str, list[Running]] = {}
        for job in jobs:
            running = self._start(job, now)
            if running is None:
                continue
            if running.definition.is_async:
                tasks.append(running)
            else:
                threads.setdefault(job.queue, []).append(running)
        for name, runs in threads.items():
            self._sync[name].submit(runs)
        if tasks:
            self._async.submit(tasks)
        return len(jobs)

    def _start(self, job: store.ClaimedJob, now: float) -> Running | None:
        """Take ``job`` into a slot; returns the run to hand to its threads or
        loop (the caller hands a whole claim over at once), or None when the
        job failed before it could run."""
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
            earlier = self.running.get(job.job_id)
            if earlier is not None:
                # Only a claim lost in a database crash hands a job out again
                # while its run goes on here; the newer run owns the job now.
                earlier.lease_lost = True
                logger.warning(
                    "job %s #%s was claimed again while an earlier run of it is still going "
                    "here (a claim lost in a database crash?); the earlier run's result will "
                    "not be written",
                    job.name,
                    job.job_id,
                    extra=job_extra(job.job_id, job.queue, job.attempt),
                )
            self.running[job.job_id] = running
            self._holding.add(running)
            self._busy[job.queue] += 1
        if job.cancel_requested:
            context._request_cancel()
        if job.unreadable is not None:  # a poison job fails alone, never retried
            error = InvalidPayloadError(f"{job.unreadable}; the job cannot run, enqueue it again")
            error.__workhorse_retry__ = False
            self._done(Finished(running, False, error=error))
            return None
        if definition is None:
            error = UnknownJobError(
                f"no job named {job.name!r} is registered in worker {self.worker_id}; deploy "
                "the code that defines it (the attempt is retried with backoff)"
            )
            self._done(Finished(running, False, error=error))
            return None
        try:
            definition.check_payload(job.payload)
        except InvalidPayloadError as exc:
            error = InvalidPayloadError(
                f"{exc}; the payload no longer fits the handler, fix the handler or the job"
            )
            error.__workhorse_retry__ = False
            self._done(Finished(running, False, error=error))
            return None
        return running

    # -- finish ------------------------------------------------------------

    def _done(self, item: Finished) -> None:
        """A handler returned (called on its thread): free the slot, hand the
        result to the writer. Under the lock, so that a run is always in
        ``running`` or counted by the writer, never between the two."""
        running = item.running
        job = running.job
        with self._lock:
            if running not in self._holding:
                return  # released at shutdown: the job is someone else's now
            self._holding.discard(running)
            self._busy[job.queue] -= 1
            self._freed += 1
            current = self.running.get(job.job_id) is running
            if current:
                del self.running[job.job_id]
            # A timed-out run's attempt is already recorded, and a run whose
            # job was claimed again is superseded: neither is written.
            if current and not running.timed_out:
                self.writing[job.job_id] = running
                self._writer.put(item)
            if self._freed >= self._claim_at:
                # Event.set takes a lock and notifies even when already set.
                if not self._more.is_set():
                    self._more.set()
                if not self._wake.is_set():
                    self._wake.set()

    def _written(self, runs: list[Running]) -> None:
        with self._lock:
            backlogged = len(self.writing) >= self._write_limit
            for running in runs:
                if self.writing.get(running.job.job_id) is running:
                    del self.writing[running.job.job_id]
            if backlogged and len(self.writing) < self._write_limit:
                self._wake.set()  # claims may go on

    def _on_writer_error(self, exc: BaseException) -> None:
        self._writer_error = exc
        self._wake.set()

    # -- timeouts, leases, cancels ----------------------------------------

    def _expire_timeouts(self) -> None:
        """Fail the sync runs past their timeout; the writer records them.

        Python cannot stop a thread: the attempt ends as timed out now, and
        the run stays in ``running`` (its slot busy) until the thread returns.
        Async runs are cancelled by their own timeout scope instead.
        """
        now = time.monotonic()
        with self._lock:
            for running in list(self.running.values()):
                if running.deadline is None or now < running.deadline:
                    continue
                if running.definition is not None and running.definition.is_async:
                    continue
                running.timed_out = True
                running.kind = "timed_out"
                exc = JobTimeout(
                    f"the attempt ran longer than its timeout of {running.job.timeout} s; its "
                    "thread is abandoned and the slot stays busy until it returns"
                )
                # Out of ``running`` (the job may be retried, even here), still
                # holding its slot, and leased until its failure is written.
                job_id = running.job.job_id
                del self.running[job_id]
                self.writing[job_id] = running
                self._writer.put(Finished(running, False, error=exc, abandoned=True))

    def _leases(self) -> list[tuple[int, int]]:
        with self._lock:
            leases = [
                (r.job.job_id, r.job.fence) for r in self.running.values() if not r.lease_lost
            ]
            leases.extend(
                (r.job.job_id, r.job.fence) for r in self.writing.values() if not r.lease_lost
            )
            return leases

    def _on_lost(self, job_id: int, fence: int) -> None:
        running = self.running.get(job_id) or self.writing.get(job_id)
        if running is None or running.lease_lost or running.job.fence != fence:
            return  # the lease of a newer run of the job is fine
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
        running.context._request_cancel()
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
        """Release what is still running, then record every result in hand.

        The runs still going leave ``running`` first, so a handler that
        returns after this point is not written: its job is released (or,
        if the release fails, recovered once its lease expires). The release
        comes before the writer's flush so that a slow flush cannot let
        those leases expire into stalls.
        """
        try:
            with self._lock:
                leftover = list(self.running.values())
                for running in leftover:
                    del self.running[running.job.job_id]
                    self._holding.discard(running)
            # Runs handed to a slot but not started yet must not start now.
            for slots in self._sync.values():
                slots.close()
            if self._async is not None:
                self._async.closing = True
                for running in leftover:
                    if running.definition is not None and running.definition.is_async:
                        self._async.cancel(running)
            if leftover:
                try:
                    self._release(leftover)
                except psycopg.Error as exc:
                    logger.warning(
                        "workhorse: could not release %s running job(s) (%s); they are "
                        "recovered once their leases expire",
                        len(leftover),
                        exc,
                    )
        finally:
            try:
                if self._writer is not None:
                    self._writer.stop()
            finally:
                self._close()

    def _release(self, leftover: list[Running]) -> None:
        # The claim connection does not wait for WAL flushes; a release does.
        with self._conn.transaction(), self._conn.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit = on")
            rows = store.release_many(
                cursor,
                self.worker_id,
                [r.job.job_id for r in leftover],
                [r.job.fence for r in leftover],
            )
        released = sum(1 for _, ok in rows if ok)
        logger.warning(
            "workhorse: released %s running job(s) back to ready (no attempt used)", released
        )

    def _close(self) -> None:
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
