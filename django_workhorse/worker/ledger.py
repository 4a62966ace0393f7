"""The ledger: every run the worker holds, and the slots they take.

The claim loop, the handler threads, the asyncio thread, the writer, the
heartbeat and the listener all need to know which runs exist and where they
are. The ledger is the one object that holds that, and the only one that
changes it; every change happens in one of its methods, under its one lock.

A run moves like this::

    start ──▶ running ──finish──▶ writing ──written──▶ (gone)
                 │                   ▲
                 ├──expire (timeout)─┤      release_all: running ──▶ (gone)
                 └──cancel───────────┘

and holds its slot (``holding``, ``busy``) from ``start`` until its handler
returns, which for a timed-out or canceled run is after it left ``running``.

Each field, what it holds, the threads that write it (always under
``_lock``) and the threads that read it:

=======================  =========================================  ===========================
field                    written by (under ``_lock``)               read by
=======================  =========================================  ===========================
``_running``             loop (start, expire, release_all),         loop, heartbeat (leases,
  job id → run going     handler threads (finish, carry_on, start), lost, cancel), writer,
                         heartbeat and listener (cancel)            listener (cancel)
``_writing``             loop (expire), handler threads (finish,    loop (backlog, settled),
  runs the writer holds  carry_on), writer (written), heartbeat     heartbeat (leases)
                         and listener (cancel), loop and carrying
                         handler thread (written, with a claim)
``_held``                handler threads (finish), loop (take_held, loop (claim)
  successes held for     hold_successes)
  the next claim's call
``_hold``                loop (hold_successes)                      handler threads (finish,
  whether to hold them                                              carry_on)
``_holding``             loop (start, release_all),                 loop (settled)
  runs holding a slot    handler threads (finish, vacate, start)
``_busy``                as ``_holding``                            loop (free slots, idle wait)
  queue → slots held
``_freed``               handler threads (finish, vacate),          loop (linger)
  freed since the claim  loop (free_slots resets it)
``_next_due``,           listener (note_due),                       loop (idle wait)
``_due_known``           loop (set_due, forget_due)
  next known run_at
``_error``               writer, carrying handler thread (fail)     loop
  what stopped writer
``_early_cancels``       heartbeat and listener (cancel), loop and  loop and handler threads
  cancels heard before   handler threads (start)                    (start)
  their run started
``Running.lease_lost``   heartbeat (lost), loop (start: superseded) heartbeat (leases)
                         liveness (unproven)
``Running.renewed``      heartbeat (renewed)                        liveness (unproven)
``_unowned``             liveness (unproven)                        heartbeat (take_unowned)
  runs stopped unproven
``Running.timed_out``    loop (expire)                              handler threads (finish)
``Running.canceled``     heartbeat and listener (cancel)            slot threads, asyncio
                                                                    thread (not started yet?)
=======================  =========================================  ===========================

The rule: no other code assigns these fields, and every method that changes
one holds ``_lock`` (``tests/unit/test_lock_rule.py`` reads the source to
check it). The lock is never held while calling out, except to hand a
result to the writer's queue, which does not block: a run is then always in
``_running`` or in ``_writing``, never between the two.

A success that ends the last run going, with no other result waiting for
the writer, is *held* instead of handed to the writer (when the worker asked
for it, ``hold_successes``): the loop claims at
once for the slot it freed, and writes the success in that same call
(``workhorse_succeed_and_claim_v1``), one round trip per job for a worker
with one slot. A held run is in ``_writing`` too, so its lease is renewed and
the writer's backlog counts it; the loop either writes it with its next
claim or hands it to the writer (``take_held``).

A worker with one slot in all goes one step further: the handler's own
thread writes that success with the next claim and runs the job it gets
(``Worker._carry_on``), so no thread wakes another between two jobs. The
run leaves ``running`` for ``writing`` but keeps its slot (``carry_on``)
until the call has landed; then the slot is given back (``vacate``) and
taken by the next run (``start``), all under the worker's claim lock, so
the loop never sees the slot free in between.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from ..context import LeaseLost
from .executor import Finished, Running, canceled, timed_out

EARLY_CANCELS_KEPT = 1000
"""Cancels of runs not going here that the ledger remembers, newest last.
Every worker hears every cancel of the fleet; one of them may be for a run
this worker claimed and has not started yet (the claim loop starts a
claim's jobs one after the other), which ``start`` then cancels at once."""


class Ledger:
    """The runs of one worker and the slots of its queues (see the module)."""

    def __init__(
        self,
        concurrency: dict[str, int],
        hand_over: Callable[[Finished], None],
        write_limit: int | None = None,
    ) -> None:
        self.concurrency = dict(concurrency)
        self._hand_over = hand_over
        # Results waiting for the writer stop the claims at this many, so a
        # writer that cannot reach the database does not let them pile up.
        # At least two: with one slot, a limit of one made every claim wait
        # for the previous job's finish to commit, two transactions in a row
        # per job; with two, the next claim runs while the finish is written
        # (one slot drained 301 jobs/s against 175).
        self.write_limit = write_limit or max(2, sum(concurrency.values()))
        self._lock = threading.Lock()
        self._running: dict[int, Running] = {}
        self._writing: dict[Running, None] = {}
        self._holding: set[Running] = set()
        self._busy = dict.fromkeys(concurrency, 0)
        self._freed = 0
        self._next_due: float | None = None
        self._due_known = False
        self._error: BaseException | None = None
        self._held: list[Finished] = []
        self._hold = False
        self._early_cancels: dict[tuple[int, int, str], None] = {}
        self._unowned: list[Running] = []

    # -- the loop: start, expire, release ----------------------------------

    def start(self, running: Running) -> tuple[Running | None, bool]:
        """Take ``running`` into a slot. Returns the earlier run of the same
        job still going here, if any: it is superseded (only a claim lost in
        a database crash hands a job out again while its run goes on); and
        whether a cancel of this run was heard before it started (between
        its claim and now), which the caller then applies (``cancel``)."""
        job = running.job
        key = (job.job_id, job.fence, running.owner)
        with self._lock:
            earlier = self._running.get(job.job_id)
            if earlier is not None:
                earlier.lease_lost = True
            self._running[job.job_id] = running
            self._holding.add(running)
            self._busy[job.queue] += 1
            canceled_first = self._early_cancels.pop(key, False) is None
        return earlier, canceled_first

    def expire(self, now: float) -> list[Running]:
        """End the sync runs whose deadline passed: each leaves ``running``
        for ``writing`` with a timed-out failure, and keeps its slot until
        its thread returns. Async runs end by their own timeout scope."""
        expired = []
        with self._lock:
            for running in list(self._running.values()):
                if running.deadline is None or now < running.deadline:
                    continue
                if running.definition is not None and running.definition.is_async:
                    continue
                running.timed_out = True
                del self._running[running.job.job_id]
                self._writing[running] = None
                self._hand_over(timed_out(running, abandoned=True))
                expired.append(running)
        return expired

    def release_all(self) -> list[Running]:
        """Take every running run out (shutdown): a handler that returns
        after this is not written, and its slot is not counted again."""
        with self._lock:
            leftover = list(self._running.values())
            self._running.clear()
            for running in leftover:
                self._holding.discard(running)
                self._busy[running.job.queue] -= 1
        return leftover

    def free_slots(self) -> dict[str, int]:
        """Free slots per queue, for the next claim; none while the writer
        is behind. Resets the count of slots freed since the last claim."""
        with self._lock:
            self._freed = 0
            if len(self._writing) >= self.write_limit:
                return {}  # the writer is behind (a lost connection?): wait for it
            return {
                name: count - self._busy[name]
                for name, count in self.concurrency.items()
                if count > self._busy[name]
            }

    # -- handler threads ---------------------------------------------------

    def finish(self, item: Finished) -> int | None:
        """A handler returned: free its slot and hand its result to the
        writer, or hold a success for the loop's next claim (see the
        module). Returns the slots freed since the last claim, or None when
        the run was already let go (released at shutdown)."""
        running = item.running
        job = running.job
        with self._lock:
            if running not in self._holding:
                return None  # released at shutdown: the job is someone else's now
            self._holding.discard(running)
            self._busy[job.queue] -= 1
            self._freed += 1
            current = self._running.get(job.job_id) is running
            if current:
                del self._running[job.job_id]
                # A timed-out run's attempt is already recorded, a run
                # whose job was claimed again is superseded, and a run whose
                # checkpoint was refused has lost its job: none is written.
                # A run that lost its lease has its success offered (fenced:
                # kept only if no other run took the job) and no failure
                # written: its handler was stopped (docs/worker.md#liveness).
                if (
                    not running.timed_out
                    and type(item.error) is not LeaseLost
                    and (item.ok or not running.lease_lost)
                ):
                    # Held only when nothing else is in flight: with results
                    # at the writer (a batch of many slots), the claim would
                    # wait for a flush the writer makes anyway.
                    hold = self._hold and item.ok and not self._running and not self._writing
                    self._writing[running] = None
                    if hold:
                        self._held.append(item)  # the loop claims now: see the module
                    else:
                        self._hand_over(item)
            return self._freed

    # -- one slot: the handler's thread claims the next job ----------------

    def carry_on(self, item: Finished) -> bool:
        """A success that its own handler thread will write with the next
        claim (``Worker._carry_on``): the run leaves ``running`` for
        ``writing`` (its lease is still renewed) and keeps its slot until
        ``vacate``. Only a success that may be held, of the one run going,
        with nothing waiting for the writer, goes this way; False, with
        nothing changed, for everything else (``finish`` takes it)."""
        running = item.running
        job_id = running.job.job_id
        with self._lock:
            if (
                not self._hold
                or not item.ok
                or self._writing
                or len(self._running) != 1
                or self._running.get(job_id) is not running
                or running not in self._holding
            ):
                return False
            del self._running[job_id]
            self._writing[running] = None
            return True

    def vacate(self, running: Running) -> None:
        """The carried-on run gives its slot back, its success written (or
        handed to the writer); in place of ``finish``."""
        with self._lock:
            if running in self._holding:
                self._holding.discard(running)
                self._busy[running.job.queue] -= 1
                self._freed += 1

    # -- held successes (the loop) -----------------------------------------

    def hold_successes(self, on: bool) -> list[Finished]:
        """Hold (or stop holding) the successes that end the last run going,
        for the loop to write with its next claim. Returns what was held
        when turning it off, for the caller to hand to the writer."""
        with self._lock:
            self._hold = on
            if on:
                return []
            held, self._held = self._held, []
            return held

    def take_held(self) -> list[Finished]:
        """The held successes, now the loop's to write (with a claim, or by
        handing them to the writer); they stay in ``writing`` until then."""
        with self._lock:
            held, self._held = self._held, []
            return held

    # -- the writer --------------------------------------------------------

    def written(self, runs: Iterable[Running]) -> bool:
        """The writes of ``runs`` landed (or were refused). True when that
        lets the loop go on: the backlog cleared, or nothing waits any more."""
        with self._lock:
            backlogged = len(self._writing) >= self.write_limit
            for running in runs:
                self._writing.pop(running, None)
            waiting = len(self._writing)
            return not waiting or (backlogged and waiting < self.write_limit)

    def awaits_write(self, running: Running) -> bool:
        """Whether a write of ``running`` is still to land (at the writer,
        held for a claim, or carried on): the writer's ``on_written`` then
        follows it."""
        with self._lock:
            return running in self._writing

    def fail(self, exc: BaseException) -> None:
        """The writer died of ``exc`` (or a handler thread's claim of its next
        job failed with a bug, ``Worker._carry_on``): the loop raises it."""
        with self._lock:
            self._error = exc

    # -- the heartbeat -----------------------------------------------------

    def leases(self) -> list[tuple[str, int, int]]:
        """(owner, job id, fence) of every run whose lease must be renewed:
        the running ones and those waiting for the writer."""
        with self._lock:
            return [
                (r.owner, r.job.job_id, r.job.fence)
                for r in (*self._running.values(), *self._writing)
                if not r.lease_lost
            ]

    def lost(self, job_id: int, fence: int, owner: str) -> Running | None:
        """The heartbeat was refused for (job, fence) under ``owner``. Returns
        the run to report as having lost its lease, or None.

        The owner is compared too: after a claim lost in a database crash the
        job may be claimed again with the same fence under the next owner
        name (docs/decisions.md), and a refusal of the old run's renewal is
        not a loss of the new run's lease.

        Only a run whose handler is still going is reported. A run handed to
        the writer may have been refused because its own result committed
        first (the job is finished, not lost); if it really lost its lease,
        the writer's refused write says so.
        """
        with self._lock:
            running = self._running.get(job_id)
            if (
                running is None
                or running.lease_lost
                or running.job.fence != fence
                or running.owner != owner
            ):
                return None
            running.lease_lost = True
            return running

    def renewed(self, job_id: int, fence: int, owner: str, sent: float) -> None:
        """A renewal that set out at ``sent`` renewed (job, fence) under
        ``owner``: its lease now runs at least ``LOCK_DURATION`` from then."""
        with self._lock:
            running = self._running.get(job_id)
            if running is not None and running.job.fence == fence and running.owner == owner:
                running.renewed = max(running.renewed, sent)

    def unproven(self, before: float) -> list[Running]:
        """The runs going here whose own lease proof (their claim, their last
        renewal) is older than ``before``: each is marked ``lease_lost`` and
        returned, for the worker to stop (``Worker._check_liveness``)."""
        with self._lock:
            lost = [
                r
                for r in self._running.values()
                if not r.lease_lost and max(r.started, r.renewed) < before
            ]
            for running in lost:
                running.lease_lost = True
            self._unowned.extend(lost)
            return lost

    def take_unowned(self) -> list[Running]:
        """The runs ``unproven`` stopped since the last call: the heartbeat
        releases their jobs once it reaches the database again (fenced, so
        a job another run took meanwhile is left alone)."""
        with self._lock:
            unowned, self._unowned = self._unowned, []
            return unowned

    def cancel(
        self, job_id: int, fence: int | None = None, owner: str | None = None
    ) -> Running | None:
        """An operator asked to cancel ``job_id`` (the run of ``fence`` claimed
        under ``owner``, when given).

        Its run, if still going here, leaves ``running`` for ``writing`` with
        a canceled end, at once: the job is acked canceled without waiting
        for its handler, which keeps its slot until it returns (as a
        timed-out sync run does). Returns that run, or None when there is
        nothing to cancel here (finished already, another run, a lost lease).
        A cancel of a run not going here is remembered (the last
        ``EARLY_CANCELS_KEPT``): if its run was claimed here and is about to
        start, ``start`` says so.
        """
        with self._lock:
            running = self._running.get(job_id)
            if running is None and fence is not None and owner is not None:
                self._early_cancels[(job_id, fence, owner)] = None
                if len(self._early_cancels) > EARLY_CANCELS_KEPT:
                    del self._early_cancels[next(iter(self._early_cancels))]
            if running is None or running.lease_lost:
                return None
            if fence is not None and running.job.fence != fence:
                return None
            if owner is not None and running.owner != owner:
                return None
            running.canceled = True
            del self._running[job_id]
            self._writing[running] = None
            self._hand_over(canceled(running))
            return running

    # -- the listener and the idle wait ------------------------------------

    def note_due(self, epoch: float) -> None:
        """A job becomes due at ``epoch`` (from a NOTIFY): keep the earliest.
        Heard while the next run_at is unknown, it still counts once the
        lookup answers (the lookup may have read before that job committed)."""
        with self._lock:
            if self._next_due is None or epoch < self._next_due:
                self._next_due = epoch

    def set_due(self, epoch: float | None) -> None:
        """The next run_at as looked up in the database (None: nothing
        scheduled), kept with any earlier one heard meanwhile; known until
        ``forget_due``, so an idle wait does not look it up again."""
        with self._lock:
            if epoch is not None and (self._next_due is None or epoch < self._next_due):
                self._next_due = epoch
            self._due_known = True

    def forget_due(self) -> None:
        """A claim found nothing: look the next run_at up again before sleeping."""
        with self._lock:
            self._next_due = None
            self._due_known = False

    # -- reads -------------------------------------------------------------

    @property
    def due(self) -> float | None:
        return self._next_due

    @property
    def due_known(self) -> bool:
        """Whether ``due`` was looked up since the last claim that found
        nothing (None then means nothing is scheduled)."""
        return self._due_known

    @property
    def error(self) -> BaseException | None:
        return self._error

    @property
    def freed(self) -> int:
        return self._freed

    def running_count(self) -> int:
        return len(self._running)

    def writing_count(self) -> int:
        return len(self._writing)

    def running_runs(self) -> list[Running]:
        with self._lock:
            return list(self._running.values())

    def settled(self) -> bool:
        """Nothing holds a slot and every result is written, or held: the
        next claim writes the held ones before it claims."""
        with self._lock:
            return not self._holding and len(self._writing) == len(self._held)

    def has_free_slot(self) -> bool:
        return bool(self.queues_with_free_slots())

    def queues_with_free_slots(self) -> list[str]:
        """The queues a claim could start something in now (free_slots
        without its side effect): what the idle loop asks the next run_at of."""
        with self._lock:
            return [name for name, count in self.concurrency.items() if count > self._busy[name]]

    def sync_deadlines(self) -> list[float]:
        """Deadlines of the sync runs: the loop wakes to record their timeouts.
        Async runs end by their own asyncio timeout."""
        with self._lock:
            return [
                r.deadline
                for r in self._running.values()
                if r.deadline and not (r.definition is not None and r.definition.is_async)
            ]

    def counts(self) -> dict[str, int]:
        """How many runs are in each place: all zero once a worker is done."""
        with self._lock:
            return {
                "running": len(self._running),
                "writing": len(self._writing),
                "holding": len(self._holding),
                "busy": sum(self._busy.values()),
            }
