"""The Worker: one claim loop feeding handler slots; a writer thread records results.

The loop, in one thread, repeats: fail the runs whose timeout passed, then
fill every free slot with one ``claim_many`` call. A slot is free as soon as
its handler returns; the result goes to the writer thread (``writer.py``),
which records a batch of them with one ``succeed_many``, ``fail_many`` and
``sleep_many`` call each on the lease connection (which it shares with the
heartbeat) while the loop claims and starts the next jobs.
A success that ends the last run going skips the writer: the loop is about
to claim for the slot it freed anyway, and writes it in that same call
(``succeed_and_claim``), so a worker with one slot makes one round trip per
job, not two on two connections and threads. With one slot in all, the
handler's thread makes that call itself and runs the job it gets
(``_carry_on``): the loop is not woken between two jobs.
When there is nothing to do the loop waits for a NOTIFY, a freed slot, or a
timer capped at ``poll_interval`` and shortened to the next known run_at.
Claims and finishes are single SQL calls, so a shutdown never interrupts
one half-way.
"""

from __future__ import annotations

import functools
import logging
import signal
import threading
import time
from typing import Any

import psycopg

from ..context import LeaseLost, claimed_context
from ..core import registry
from ..core.conf import import_callable
from ..core.definitions import JobDefinition
from ..db import store
from ..exceptions import JobTimeout, SchemaVersionError
from . import executor, instruments, queue_limits, sidecars
from .cancels import call_cancel_hook, log_recovered_cancel, of_recovered, stored_reason
from .claims import ClaimSession
from .connection import SharedConnection, application_name, connect, retry_delays
from .execution import AsyncSlots, SyncSlots
from .executor import SUCCEEDED, Closing, Finished, Running
from .failures import call_stall_hook, log_recovered
from .heartbeat import Heartbeat
from .hookcalls import HookCalls
from .ledger import Ledger
from .linger import Linger
from .liveness import Liveness
from .logs import install_record_factory, job_extra, log_start, log_success
from .options import (  # noqa: F401  (re-exported: runworker and tests import them here)
    WorkerOptions,
    check_store,
    make_worker_id,
    resolve_options,
)
from .presence import describe_every, describe_worker
from .recycle import Recycle
from .report import Reporter, lost
from .retention_turn import RetentionSweeper, start_retention
from .routes import SuccessRoute
from .vacuum import VacuumSweeper, start_vacuum
from .waiting import say_what_waits
from .wakeups import SELF_TEST_TIMEOUT, Listener
from .writer import Writer

logger = logging.getLogger("django_workhorse.worker")


class Worker:
    """Claims and runs jobs until stopped. Tests drive it directly; ``runworker``
    wraps it. ``run()`` returns the process exit code.

    Which runs exist, where each is (running, waiting for the writer) and
    which slots they hold is the ``ledger``'s alone (``ledger.py``); the
    worker asks it and tells it, from whichever thread a callback runs on.
    The worker's own fields are set in ``__init__`` and then only read,
    except these, each used by one thread: ``_stop_deadline`` and
    ``_db_clock_ahead`` (the claim loop), ``_signals`` (the main thread's
    signal handler), and ``_sync``, ``_async``, ``_listener``,
    ``_heartbeat``, ``_sidecars``, ``_retention``, ``_vacuum`` (set by
    ``run`` before the threads they start exist; ``_async`` may instead be
    set by the first async claim, under ``_claim_lock``). ``_session``
    claims, opens and closes under ``_claim_lock`` only: by the claim loop,
    and with one slot by the handler thread that claims its next job
    (``_carry_on``); its connection (``_session.shared``) is lent a
    statement or a transaction at a time to the other users of the claim
    connection (checkpoints, the sweeps, the listener's start-up probe, the
    look-up of a canceled job's reason). Cross-thread signals are
    ``threading.Event``s.
    """

    def __init__(self, options: WorkerOptions) -> None:
        self.options = options
        self.settings = options.settings
        self.worker_id = options.worker_id
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._forced = threading.Event()
        self._stop_deadline: float | None = None
        self._signals = 0
        self._hook = import_callable(options.on_job_failure) if options.on_job_failure else None
        self._cancel_hook = (
            import_callable(options.on_job_canceled) if options.on_job_canceled else None
        )
        self._linger = Linger()
        # Every ON_JOB_FAILURE / ON_JOB_CANCELED call runs there, after the
        # end it reports is recorded (hookcalls.py).
        self._hooks = HookCalls()
        self._reporter = Reporter(self._hooks, self._hook, self._cancel_hook)
        # Two connections to the database, whatever the slots and features
        # (docs/worker.md#connections): the claim connection (the session's)
        # and the lease connection, shared by the heartbeat and the writer.
        self._lease = SharedConnection(
            lambda: connect(
                options.alias,
                application_name=application_name("workhorse-heartbeat", self.worker_id),
            )
        )
        self._writer = Writer(
            alias=options.alias,
            hook=self._hook,
            cancel_hook=self._cancel_hook,
            hooks=self._hooks,
            in_flight=self._running_count,
            on_written=self._written,
            on_error=self._on_writer_error,
            give_up=self._forced,
            connection=self._lease,
            reporter=self._reporter,
        )
        self.ledger = Ledger(options.concurrency, hand_over=self._writer.put)
        self._session = ClaimSession(self.worker_id, self._connect)
        self._claim_lock = threading.Lock()
        # How far the database's clock is ahead of this process's (seconds,
        # negative when behind), as of the last look-up of the next run_at;
        # read and written by the claim loop only.
        self._db_clock_ahead = 0.0
        # One slot in all: its handler thread claims the next job (_carry_on).
        self.route = SuccessRoute.choose(options.concurrency)
        self._one_slot = self.route.carries_on
        # Checkpoints and sleeps are written on the claim connection, in
        # transactions of their own, one at a time with the claims.
        self._checkpoint_cursor = self._session.shared.cursor
        self._sync: dict[str, SyncSlots] = {}
        self._async: AsyncSlots | None = None
        self._listener: Listener | None = None
        self._heartbeat: Heartbeat | None = None
        self._liveness = Liveness(self.settings.lock_duration, self._check_liveness)
        self._sidecars: sidecars.Sidecars | None = None
        self._retention: RetentionSweeper | None = None
        self._vacuum: VacuumSweeper | None = None
        self._recycle = Recycle(options.max_jobs, options.max_seconds)

    @property
    def owner(self) -> str:
        """The owner name of the claims made now (see ``claims.py``)."""
        return self._session.owner

    # -- control -----------------------------------------------------------

    def request_stop(self) -> None:
        """Begin a graceful stop (first signal); a second call forces it."""
        if self._stopping.is_set():
            self._forced.set()
        else:
            self._stopping.set()
        self._wake.set()

    def install_signal_handlers(self) -> None:
        """SIGTERM/SIGINT: the first drains gracefully, the second forces.

        The handler runs on the main thread between two bytecodes, possibly
        while that thread holds the wake-up event's lock, so it only counts
        the signal and hands the rest to a new thread.
        """

        def handle(signum: int, frame: object) -> None:
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
                "workhorse: %s received, finishing running jobs (up to %g s; "
                "send it again to stop now)",
                name,
                self.settings.shutdown_grace,
            )
            if self._stopping.is_set():  # --max-jobs or --max-seconds began it
                self._wake.set()
            else:
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
        self._session.open()
        with self._session.shared.cursor() as cursor:
            problem = store.schema_problem(store.schema_version(cursor))
            if problem:
                raise SchemaVersionError(f"database {self.options.alias!r}: {problem}")
            store.ensure_partitions(cursor, self.settings.partition_days_ahead)
            queue_limits.sync(cursor, self.settings, self.options.queues)
            say_what_waits(cursor, self.options)
        self._sidecars = sidecars.start(
            self.options, self._session.shared, duty=self._liveness.sweeps
        )
        # Whatever tracing and metrics are (configured just above): they read
        # what they need from the claim's own rows (instruments.observe_claimed).
        self.ledger.hold_successes(True)
        self._start_threads()
        registry.on_register(self._on_register)
        logger.info(
            "workhorse worker %s serving %s on database %r; successes recorded %s",
            self.worker_id,
            ", ".join(f"{q}({n})" for q, n in self.options.concurrency.items()),
            self.options.alias,
            self.route.value,
        )
        try:
            self._loop()
        finally:
            registry.remove_listener(self._on_register)
            self._shutdown()
        return 1 if self._forced.is_set() else 0

    def _start_threads(self) -> None:
        needs_async = any(
            d.is_async for d in registry.all_jobs().values() if d.queue in self.options.queues
        )
        for name, count in self.options.concurrency.items():
            self._sync[name] = SyncSlots(count, self._finished_sync, f"workhorse-{name}")
        if needs_async:
            self._async = AsyncSlots(self._done, "workhorse")
        # Always: besides the failure and cancel hooks, a run's own code may
        # ask for a call once its end is recorded (a Django task's
        # task_finished), and any job name may be a task's.
        self._hooks.start()
        self._writer.start()
        listen_alias = self.settings.listen_alias(self.options.alias)
        lease = self.settings.lock_duration
        self._listener = Listener(
            alias=listen_alias,
            queues=self.options.queues,
            on_ready=self._wake.set,
            on_due=self._on_due,
            on_cancel=self._cancel_notified,
            send_probe=self._send_probe,
            application_name=application_name("workhorse-listener", self.worker_id),
            pulse=(self.worker_id, lease, self._pulsed),
        )
        self._listener.start()
        self._liveness.start()
        self._heartbeat = Heartbeat(
            alias=self.options.alias,
            lease_seconds=self.settings.lock_duration,
            renew_interval=self.settings.lock_renew_interval,
            stalled_interval=self.settings.stalled_interval,
            partition_days_ahead=self.settings.partition_days_ahead,
            in_flight=self.ledger.leases,
            on_lost=self._on_lost,
            on_cancel=self._cancel_renewed,
            on_recovered=self._on_recovered,
            describe=self._describe,
            connection=self._lease,
            on_renewed=self.ledger.renewed,
            take_unowned=self._take_unowned,
            sweeps=self._liveness.sweeps,
        )
        self._heartbeat.on_swept = self._wake.set
        self._heartbeat.start()
        self._retention = start_retention(self.options.alias, self._session.shared)
        self._vacuum = start_vacuum(
            self.options.alias,
            self.settings.vacuum_interval,
            self._session.shared,
            duty=self._liveness.sweeps,
        )
        self._listener.self_test_done.wait(SELF_TEST_TIMEOUT + 1.0)
        self._say_if_polling(listen_alias)

    def _send_probe(self, channel: str) -> None:
        """The listener's start-up NOTIFY, sent on the claim connection: one
        that arrives proves the listener hears this database's notifications."""
        with self._session.shared.cursor() as cursor:
            store.notify(cursor, channel, "probe")

    def _say_if_polling(self, listen_alias: str) -> None:
        """Say once, at start, that this worker polls instead of listening, and why."""
        assert self._listener is not None
        alias, poll = self.options.alias, self.settings.poll_interval
        if self._listener.pooled and listen_alias == alias:
            logger.warning(
                "workhorse: database %r is reached through a connection pooler (PgBouncer?), "
                "where LISTEN cannot work; polling every %g s instead, so new jobs wait up to "
                "that long. Set WORKHORSE['LISTEN_DATABASE'] to an alias of DATABASES that "
                "connects to PostgreSQL directly to be woken at once (docs/settings.md)",
                alias,
                poll,
            )
        elif self._listener.pooled:
            logger.warning(
                "workhorse: WORKHORSE['LISTEN_DATABASE'] names %r, which is reached through a "
                "connection pooler too, where LISTEN cannot work; polling every %g s instead. "
                "Point that alias at PostgreSQL itself (its host and port, not the pooler's)",
                listen_alias,
                poll,
            )
        elif not self._listener.delivering.is_set():
            logger.warning(
                "workhorse: NOTIFY is not delivered: one sent on database %r did not reach "
                "the LISTEN connection on %r within %g s (another database? a pooler?); "
                "polling every %g s instead",
                alias,
                listen_alias,
                SELF_TEST_TIMEOUT,
                poll,
            )

    def _describe(self) -> dict[str, Any]:
        """What the workers view shows of this worker (workhorse_worker.info)."""
        busy = self.ledger.counts()["busy"]
        return describe_worker(
            self.worker_id,
            self.options.concurrency,
            busy,
            describe_every(busy, self.settings.lock_renew_interval),
            self.route.label,
        )

    def _loop(self) -> None:
        while True:
            try:
                if self._pass():
                    return
            except psycopg.OperationalError as exc:
                if self._stopping.is_set() and not self.ledger.running_count():
                    return
                logger.warning(
                    "workhorse: database error (%s); the claim was rolled back and is retried "
                    "on a new connection",
                    exc,
                )
                self._reconnect()

    def _connect(self) -> psycopg.Connection:
        return connect(
            self.options.alias,
            application_name=application_name("workhorse-worker", self.worker_id),
        )

    def _reconnect(self) -> None:
        with self._claim_lock:
            self._session.close()
        # One warning per outage, one line when it ends; the tries between
        # (with a growing delay) are logged at DEBUG.
        started, tries = time.monotonic(), 0
        for delay in retry_delays():
            # The first SIGTERM ends the wait too: a stopping worker has no
            # more claims to make, and _pass ends the loop.
            if self._stopping.is_set():
                return
            try:
                with self._claim_lock:
                    self._session.open()
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
        if self.ledger.error is not None:
            raise self.ledger.error
        self._expire_timeouts()
        if self._forced.is_set():
            return True
        if self._recycle.due() and not self._stopping.is_set():
            logger.info(
                "workhorse: %s reached; finishing the running jobs, then exiting",
                self._recycle.reason(),
            )
            self._stopping.set()
        if self._stopping.is_set():
            self._hand_held_over(self.ledger.hold_successes(False))  # no more claims
            if self._stop_deadline is None:
                self._stop_deadline = time.monotonic() + self.settings.shutdown_grace
            if not self.ledger.running_count() or time.monotonic() >= self._stop_deadline:
                return True
            self._wake.wait(0.05)
            return False
        with self._claim_lock:  # the slots are the loop's or the carrying thread's
            # Nothing running and every result recorded: the claim below sees
            # all there is, so a burst worker that claims nothing is done;
            # once the first stall sweep has run, so that what it recovers
            # (leases that expired while no worker ran) is there to claim.
            settled = self.ledger.settled() and (
                self._heartbeat is None or self._heartbeat.swept.is_set()
            )
            free = self._recycle.limit(self._free_slots())
            if self._stopping.is_set() or self.ledger.error is not None:
                return False  # the next pass handles it
            claimed = self._claim(free)
            self._recycle.claimed(claimed)
        if claimed:
            if not self.ledger.has_free_slot():
                # Every slot is taken: nothing for a pass to do before one
                # frees, and each event a pass acts on sets the wake-up (one
                # pass less per job with one slot).
                self._wake.wait(self._idle_timeout())
            return False
        if self.options.burst and settled:
            return True
        self._wake.wait(self._idle_timeout())
        return False

    def _free_slots(self) -> dict[str, int]:
        """The free slots per queue, after lingering for the runs still going
        once one has finished: a burst of short jobs then refills its slots
        with one claim."""
        freed, going = self.ledger.freed, self.ledger.running_count()
        if freed and going:
            self._linger.wait(freed + going, lambda: self.ledger.freed)
        return self.ledger.free_slots()

    def _idle_timeout(self) -> float:
        listener = self._listener
        if listener is not None and listener.delivering.is_set() and listener.is_alive():
            timeout = self.settings.listening_poll_interval
        else:
            timeout = self.settings.poll_interval
        if self.ledger.has_free_slot():
            # Looked up once per empty claim, not on every wait: with one
            # slot the loop waits once per job.
            if not self.ledger.due_known:
                with self._claim_lock, self._session.shared.cursor() as cursor:
                    # Only the queues with a free slot: a due job of a queue
                    # whose slots are full cannot start here before one frees
                    # (which wakes the loop), and waking for it would loop.
                    next_at, clock = store.next_run_at_and_clock(
                        cursor, self.ledger.queues_with_free_slots()
                    )
                # Due times are on the database's clock (lookups and NOTIFYs
                # alike); the wait for one is timed on this process's clock,
                # less how far the database's is ahead, so a worker whose
                # clock is off neither picks scheduled jobs up late nor polls.
                self._db_clock_ahead = clock.timestamp() - time.time()
                self.ledger.set_due(next_at.timestamp() if next_at else None)
            due = self.ledger.due
            if due is not None:
                # A due time already past (rows locked by another worker's
                # claim) is retried shortly, never in a busy loop.
                wait = due - self._db_clock_ahead - time.time() + 0.001
                timeout = min(timeout, max(0.01, wait))
        deadlines = self.ledger.sync_deadlines()
        if self._recycle.deadline is not None:
            deadlines = [*deadlines, self._recycle.deadline]
        if deadlines:
            timeout = min(timeout, max(0.0, min(deadlines) - time.monotonic()))
        return timeout

    def _on_due(self, epoch: float) -> None:
        self.ledger.note_due(epoch)
        self._wake.set()

    def _on_register(self, definition: JobDefinition[..., Any]) -> None:
        check_store(definition, self.options.alias, self.options.queues)
        self._wake.set()

    # -- claim and start ---------------------------------------------------

    def _claim(self, free: dict[str, int]) -> int:
        """Fill ``free`` slots with one ``claim_many`` call, which writes the
        held successes first; the jobs claimed."""
        held = self.ledger.take_held()
        if not free:
            self._hand_held_over(held)
            return 0
        if held:
            owner, jobs = self._succeed_and_claim(held, free)
        else:
            owner, jobs = self._session.claim(
                list(free), list(free.values()), self.settings.lock_duration
            )
        if not jobs:
            self.ledger.forget_due()  # look the next run_at up again before sleeping
            return 0
        definitions = registry.all_jobs()
        now = time.monotonic()
        tasks: list[Running] = []
        threads: dict[str, list[Running]] = {}
        for job in jobs:
            running = self._start(job, owner, definitions.get(job.name), now)
            if running is None:
                continue
            if running.definition is not None and running.definition.is_async:
                tasks.append(running)
            else:
                threads.setdefault(job.queue, []).append(running)
        for name, runs in threads.items():
            self._sync[name].submit(runs)
        if tasks:
            self._async_slots().submit(tasks)
        return len(jobs)

    def _async_slots(self) -> AsyncSlots:
        """The event loop of async handlers. ``run`` starts it when a served
        queue has an async job registered; otherwise the first async job
        claimed starts it (one enqueued with ``.options(queue=...)`` into a
        queue of sync jobs, or registered after the start). Called under the
        claim lock, so only one is ever made."""
        if self._async is None:
            self._async = AsyncSlots(self._done, "workhorse")
        return self._async

    def _succeed_and_claim(
        self, held: list[Finished], free: dict[str, int]
    ) -> tuple[str, list[store.ClaimedJob]]:
        """Write ``held`` successes and claim for ``free`` in one call.

        What that call cannot take goes to the writer, which knows what to do
        with it: a run claimed under an earlier owner name (before a
        reconnect), a value that is not JSON, and, when the database refuses
        the call, all of them (the writer then finds the culprit alone). A
        lost connection hands them over too: nothing of the call committed,
        unless the connection died after its commit, and then the writer's
        fenced write is refused and reported as a lost lease (the writer
        only recognises its own batches written again; a success has no
        hook, so nothing but the warning is wrong).
        """
        owner = self._session.owner
        queues, limits_ = list(free), list(free.values())
        lease = self.settings.lock_duration
        closings: list[Closing] = []
        for item in held:
            if item.running.owner == owner:
                closing = executor.close(item)
                if closing.outcome == SUCCEEDED:
                    closings.append(closing)
                    continue
            self._writer.put(item)  # the writer writes what close made of it
        if not closings:
            return self._session.claim(queues, limits_, lease)
        try:
            succeeded, jobs = self._session.succeed_and_claim(
                owner,
                [c.running.job.job_id for c in closings],
                [c.running.job.fence for c in closings],
                [c.encoded for c in closings],
                queues,
                limits_,
                lease,
            )
        except psycopg.OperationalError:
            self._hand_held_over([c.item for c in closings])
            raise
        except psycopg.Error:
            self._hand_held_over([c.item for c in closings])
            return self._session.claim(queues, limits_, lease)
        for (_job_id, ok), closing in zip(succeeded, closings, strict=True):
            if not ok:
                self._reporter.report(closing, None)
        instruments.count_successes(closings, succeeded)
        instruments.observe_runs()  # their run times, as the writer does after a batch
        runs = [c.running for c in closings]
        # The loop is this thread: it goes on by itself, no wake-up needed.
        self.ledger.written(runs)
        self._after_recorded(runs, written=True)
        return owner, jobs

    def _hand_held_over(self, held: list[Finished]) -> None:
        """Give held successes to the writer: no claim is coming to carry them."""
        for item in held:
            self._writer.put(item)

    def _finished_sync(self, item: Finished) -> Running | None:
        """A sync handler returned (on its slot's thread): the run to start
        next on this thread, if ``_carry_on`` claimed one; else as ``_done``."""
        log_success(item)
        if self._one_slot and not self._stopping.is_set() and self.ledger.error is None:
            with self._claim_lock:
                if self._recycle.room() and self.ledger.carry_on(item):
                    return self._carry_on(item)
        self._done(item, logged=True)
        return None

    def _carry_on(self, item: Finished) -> Running | None:
        """One slot in all: write ``item``'s success with the claim of the
        next job, from the handler's own thread, and start that job here.

        The loop would make the same call for the slot this run frees; made
        here, no thread wakes another between two jobs. The loop stays free
        for what it does besides claiming: timeouts, stops, recoveries.
        Called under the claim lock, after ``ledger.carry_on``; the slot
        passes from this run to the next without ever looking free to the
        loop. A failed call leaves the success with the writer (see
        ``_succeed_and_claim``), gives the slot back and wakes the loop,
        which reconnects if it must.
        """
        running = item.running
        try:
            owner, jobs = self._succeed_and_claim([item], {running.job.queue: 1})
        except psycopg.Error:
            jobs = []
        except BaseException as exc:  # a bug: stop the worker as the writer's would
            logger.exception("workhorse: a claim on the handler's thread failed")
            self.ledger.fail(exc)
            jobs = []
        self.ledger.vacate(running)
        if not jobs:
            self._wake.set()  # the loop claims from here on, or a burst worker is done
            return None
        (job,) = jobs
        self._recycle.claimed(1)
        definition = registry.all_jobs().get(job.name)
        nxt = self._start(job, owner, definition, time.monotonic())
        if nxt is None:
            return None  # failed before it could run; _done woke the loop
        if nxt.deadline is not None:
            self._wake.set()  # the loop's wait ends at the deadlines of the runs going
        if nxt.definition is not None and nxt.definition.is_async:
            self._async_slots().submit([nxt])
            return None
        return nxt

    def _start(
        self,
        job: store.ClaimedJob,
        owner: str,
        definition: JobDefinition[..., Any] | None,
        now: float,
    ) -> Running | None:
        """Take ``job`` into a slot; returns the run to hand to its threads or
        loop (the caller hands a whole claim over at once), or None when the
        job failed before it could run."""
        context = claimed_context(
            job,
            worker_id=self.worker_id,
            using=self.options.alias,
            owner=owner,
            cursor=self._checkpoint_cursor,
        )
        deadline = now + job.timeout if job.timeout else None
        running = Running(job, definition, context, now, owner, deadline)
        earlier, canceled_first = self.ledger.start(running)
        if earlier is not None:
            logger.warning(
                "job %s #%s was claimed again while an earlier run of it is still going "
                "here (a claim lost in a database crash?); the earlier run's result will "
                "not be written",
                job.name,
                job.job_id,
                extra=job_extra(job.job_id, job.queue, job.attempt, job.name),
            )
        if job.cancel_requested:
            context._request_cancel()
        if canceled_first:
            # Its cancel was heard between the claim and now: apply it now,
            # not at the next heartbeat.
            self._on_cancel(job.job_id, job.fence, owner, "a notification, before it started")
        refused = executor.admit(running, f"worker {self.worker_id}")
        if refused is not None:
            self._done(refused)
            return None
        log_start(running)
        return running

    # -- finish ------------------------------------------------------------

    def _done(self, item: Finished, logged: bool = False) -> None:
        """A handler returned (called on its thread, or on the loop's for a
        run refused before it started): the ledger frees the slot and hands
        the result to the writer, or holds a success for the loop's next
        claim; a freed slot may end the claim linger and wakes the loop."""
        if not logged:
            log_success(item)
        freed = self.ledger.finish(item)
        if freed is not None and self._linger.arrived(freed) and not self._wake.is_set():
            self._wake.set()
        if type(item.error) is LeaseLost and freed is not None:
            lost(item.running, item.error.what)
        running = item.running
        if running.context._awaits_recorded() and not self.ledger.awaits_write(running):
            # Nothing of this run is to be written (its end was recorded
            # while it ran: a timeout, a cancel; or it lost its job).
            self._after_recorded([running], written=False)

    def _running_count(self) -> int:
        return self.ledger.running_count()

    def _written(self, runs: list[Running]) -> None:
        if self.ledger.written(runs):
            self._wake.set()  # claims may go on, or a burst worker may be done
        self._after_recorded(runs, written=True)

    def _after_recorded(self, runs: list[Running], *, written: bool) -> None:
        """Hand the calls the runs' code asked for once their ends were
        recorded (``JobContext._call_when_recorded``) to the hook thread,
        with what was recorded (``Reporter.after_recorded``)."""
        for running in runs:
            if not running.context._awaits_recorded():
                continue  # the common case
            self._reporter.after_recorded(running, written=written)

    def _on_writer_error(self, exc: BaseException) -> None:
        self.ledger.fail(exc)
        self._wake.set()

    # -- timeouts, leases, cancels ----------------------------------------

    def _expire_timeouts(self) -> None:
        """Fail the sync runs past their timeout; the writer records them.

        Python cannot stop a thread: the attempt ends as timed out now, and
        the run keeps its slot until the thread returns (see the ledger).
        """
        self.ledger.expire(time.monotonic())

    def _on_lost(self, job_id: int, fence: int, owner: str) -> None:
        """The database refused the renewal of a run going here: another run
        owns its job now (or it ended). The run is stopped, not left to run
        on beside the other one."""
        running = self.ledger.lost(job_id, fence, owner)
        if running is None:
            return
        job = running.job
        logger.warning(
            "job %s #%s: lease lost while running (the renewal was refused: another run "
            "owns the job now, or it ended); its handler is stopped and its result will "
            "not be written",
            job.name,
            job.job_id,
            extra=job_extra(job.job_id, job.queue, job.attempt, job.name),
        )
        self._stop_run(running, LeaseLost("lease renewal"))

    def _check_liveness(self, before: float) -> None:
        """The liveness thread found the worker unproven (``liveness.py``):
        stop each run whose ownership is proven only for earlier than
        ``before``, before stall recovery may hand its job to another worker."""
        stopped = self.ledger.unproven(before)
        if not stopped:
            return
        seconds = time.monotonic() - before
        logger.error(
            "workhorse: this worker could not prove it is alive for over %.1f s (LOCK_DURATION "
            "is %g s): neither its liveness pulse nor a renewal reached the database. It "
            "stopped %s run(s) so that no job has two live owners; their jobs return to "
            "ready once it reaches the database again, or by stall recovery",
            seconds,
            self.settings.lock_duration,
            len(stopped),
        )
        for running in stopped:
            job = running.job
            logger.warning(
                "job %s #%s: lease lost (its ownership unproven past its lease): run stopped",
                job.name,
                job.job_id,
                extra=job_extra(job.job_id, job.queue, job.attempt, job.name),
            )
            self._stop_run(
                running,
                LeaseLost(
                    "lease",
                    "the worker could not prove it still owned the job before its lease ran "
                    "out; the run was stopped so that the job does not run twice",
                ),
            )

    def _pulsed(self, sent: float, leads: bool) -> None:
        """A pulse landed (the listener's thread). It proves the worker alive
        only where stall recovery looks: on this worker's own database, which
        the listener's start-up NOTIFY reaching it showed (a LISTEN_DATABASE
        on another server or database would prove nothing there)."""
        listener = self._listener
        if listener is not None and listener.delivering.is_set():
            self._liveness.proved(sent, leads)

    def _take_unowned(self) -> list[tuple[str, int, int]]:
        return [(r.owner, r.job.job_id, r.job.fence) for r in self.ledger.take_unowned()]

    def _stop_run(self, running: Running, error: LeaseLost) -> None:
        """Tell a run that no longer holds its job: a sync handler gets
        ``error`` at its next checkpoint, sleep or ``raise_if_canceled()``,
        an async one is cancelled."""
        running.context._lose(error)
        definition = running.definition
        if self._async is not None and definition is not None and definition.is_async:
            self._async.cancel(running)

    def _cancel_notified(self, job_id: int, fence: int, owner: str) -> None:
        """A cancel announced on the control channel (the listener's thread):
        every worker hears it; only the one holding that run acts."""
        self._on_cancel(job_id, fence, owner, "a notification")

    def _cancel_renewed(self, job_id: int, fence: int, owner: str) -> None:
        """A cancel request in the heartbeat's reply (the heartbeat's thread)."""
        self._on_cancel(job_id, fence, owner, "the heartbeat")

    def _on_cancel(
        self, job_id: int, fence: int | None = None, owner: str | None = None, told_by: str = ""
    ) -> None:
        """Stop the run of ``job_id``: the ledger acks it canceled at once (the
        writer records it); an async handler is cancelled, a sync one sees
        ``JobCanceledError`` at its next ``raise_if_canceled()`` or is abandoned
        like a timed-out one, keeping its slot until it returns."""
        running = self.ledger.cancel(job_id, fence, owner)
        if running is None:
            return
        running.context._request_cancel()
        job = running.job
        logger.info(
            "job %s #%s: cancel requested (told by %s); acked canceled without waiting for "
            "its handler",
            job.name,
            job.job_id,
            told_by or "the worker",
            extra=job_extra(job.job_id, job.queue, job.attempt, job.name),
        )
        definition = running.definition
        if self._async is not None and definition is not None and definition.is_async:
            self._async.cancel(running)
        self._wake.set()  # a stopping worker may be waiting for this run

    def _on_recovered(self, recovered: list[store.Recovered]) -> None:
        """Jobs the stall sweep took back (on the heartbeat's thread): logged
        here, their hooks called on the hook thread, never on this one (a
        slow hook must not let leases expire)."""
        for item in recovered:
            if item.canceled:
                log_recovered_cancel(item)
                if self._cancel_hook is not None:
                    self._hooks.submit(
                        item.job_id,
                        "on_job_canceled",
                        functools.partial(self._call_recovered_cancel_hook, item),
                    )
                continue
            log_recovered(item)
            if item.failed and self._hook is not None:
                self._hooks.submit(
                    item.job_id,
                    "on_job_failure",
                    functools.partial(call_stall_hook, self._hook, item),
                )
        self._wake.set()

    def _call_recovered_cancel_hook(self, item: store.Recovered) -> None:
        """On the hook thread: ``ON_JOB_CANCELED`` for a job the stall sweep
        ended canceled, with the reason its envelope holds (read with the
        claim connection, in turn with the claims)."""
        with self._session.shared.cursor() as cursor:
            reason = stored_reason(cursor, item.job_id)
        call_cancel_hook(self._cancel_hook, of_recovered(item, reason))

    # -- shutdown ----------------------------------------------------------

    def _shutdown(self) -> None:
        """Release what is still running, then record every result in hand.

        The runs still going leave the ledger first, so a handler that
        returns after this point is not written: its job is released (or,
        if the release fails, recovered once its lease expires). The release
        comes before the writer's flush so that a slow flush cannot let
        those leases expire into stalls.
        """
        try:
            # Under the claim lock: a handler thread claiming its next job
            # (_carry_on) has started it by now, or starts nothing after this.
            with self._claim_lock:
                self._hand_held_over(self.ledger.hold_successes(False))
                leftover = self.ledger.release_all()
            # Runs handed to a slot but not started yet must not start now;
            # those that timed out while they waited give their slot back.
            for slots in self._sync.values():
                for running in slots.close():
                    self.ledger.finish(Finished(running, False, error=JobTimeout("not started")))
            if self._async is not None:
                self._async.stop_intake()
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
                self._writer.stop()
            finally:
                # After the writer: its last batch's hook calls are queued by now.
                self._hooks.stop()
                self._close()

    def _release(self, leftover: list[Running]) -> None:
        by_owner: dict[str, list[Running]] = {}
        for running in leftover:
            by_owner.setdefault(running.owner, []).append(running)
        released = 0
        canceled: list[Running] = []
        with self._session.shared.use() as conn, conn.transaction(), conn.cursor() as cursor:
            for owner, runs in by_owner.items():
                rows = store.release_many(
                    cursor, owner, [r.job.job_id for r in runs], [r.job.fence for r in runs]
                )
                for (_, ok, was_canceled), running in zip(rows, runs, strict=True):
                    if ok and was_canceled:
                        canceled.append(running)
                    elif ok:
                        released += 1
        if released:
            logger.warning(
                "workhorse: released %s running job(s) back to ready (no attempt used)", released
            )
        if canceled:
            # Their cancel was requested and not yet heard here: a release
            # would have undone it (workhorse_release_many_v1).
            logger.warning("workhorse: %s running job(s) ended canceled at shutdown", len(canceled))
            self._report_release_cancels(canceled)

    def _report_release_cancels(self, canceled: list[Running]) -> None:
        """Log each job the release ended canceled; ``ON_JOB_CANCELED`` is
        called on the hook thread."""
        for running in canceled:
            with self._session.shared.cursor() as cursor:
                reason = stored_reason(cursor, running.job.job_id)
            self._reporter.canceled(running, reason)

    def _close(self) -> None:
        self._liveness.stop()
        if self._sidecars:
            self._sidecars.stop()
        if self._retention:
            self._retention.stop()
        if self._vacuum:
            self._vacuum.stop()
        if self._heartbeat:
            self._heartbeat.stop()
        if self._listener:
            self._listener.stop()
        for slots in self._sync.values():
            slots.close()
        if self._async:
            self._async.close()
        if self._heartbeat:
            self._heartbeat.join(2.0)
        for thread in (self._retention, self._vacuum):
            if thread is not None and thread.is_alive():
                thread.join(1.0)
        # Not waiting long for a thread stuck in a statement (a forced stop).
        self._session.close(wait=False)
        self._lease.close(wait=False)
        if self._listener:
            # It looks at its stop flag every 0.5 s; joined, its connection is
            # closed when run() returns.
            self._listener.join(1.0)
