"""Where handlers run for a worker: a thread per sync slot, one event loop
for async handlers.

The slots decide only where and when a run goes; calling its handler is
``executor.execute`` / ``executor.aexecute``. Each run reports back by
calling ``done`` with its ``Finished`` end, on the thread (or loop) that ran
it; the worker has those written, by its writer thread or with its next
claim (``Worker._done``, ``Worker._finished_sync``). Nothing here touches
the database.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from ..context import set_current
from ..exceptions import JobTimeout
from .executor import Finished, Running, aexecute, execute

__all__ = ["AsyncSlots", "Finished", "Running", "SyncSlots", "run_sync"]

logger = logging.getLogger("django_workhorse.worker")


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
    """Run one sync handler (``executor.execute``) in a copy of the thread's
    ``contextvars``, as an async run gets its task's: what a handler binds
    there (a logging library's per-job values, say) ends with its run
    instead of carrying into the next job of the thread."""
    return contextvars.copy_context().run(execute, running, idle=idle)


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
        self._done(await aexecute(running))

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
