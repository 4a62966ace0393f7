"""Running handlers: a thread per sync slot, one event loop for async handlers.

Handlers report back through one queue of ``Finished`` items that the claim
loop drains and writes in batches; nothing here touches the database (a
handler's own ORM use aside).
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import close_old_connections

from ..context import JobContext, reset_current, set_current
from ..definitions import JobDefinition
from ..store import ClaimedJob


class JobTimeout(Exception):
    """The attempt ran longer than the job's ``timeout``."""


@dataclass(eq=False)
class Running:
    """One claimed job while the worker owns it."""

    job: ClaimedJob
    definition: JobDefinition | None
    context: JobContext
    started: float = field(default_factory=time.monotonic)
    deadline: float | None = None
    lease_lost: bool = False
    timed_out: bool = False
    """The timeout fired and the attempt was recorded; the thread may still run."""
    task: asyncio.Future | None = None
    kind: str = "failed"
    """How the attempt closes if it fails: 'failed' or 'timed_out'."""


@dataclass(slots=True)
class Finished:
    """A handler's end: its return value, or the exception it raised."""

    running: Running
    ok: bool
    value: Any = None
    error: BaseException | None = None
    encoded: str | None = None
    """The return value as JSON, once encoded."""
    abandoned: bool = False
    """A timed-out sync run whose thread is still going: its slot stays busy."""


class SyncSlots:
    """Up to ``count`` threads running sync handlers, fed in claim order.

    Threads are started only when no started one is idle (as
    ThreadPoolExecutor does), so short handlers run on few threads and a
    burst of jobs does not wake a hundred of them. They are daemon threads:
    a handler abandoned after its timeout never holds the process open.
    """

    def __init__(self, count: int, done: Callable[[Finished], None], name: str) -> None:
        self._inbox: queue.SimpleQueue[Running | None] = queue.SimpleQueue()
        self._done = done
        self._max = count
        self._name = name
        self._idle = threading.Semaphore(0)
        self._threads: list[threading.Thread] = []

    def submit(self, running: Running) -> None:
        self._inbox.put(running)
        if not self._idle.acquire(blocking=False) and len(self._threads) < self._max:
            thread = threading.Thread(
                target=self._serve, name=f"{self._name}-slot-{len(self._threads)}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def close(self) -> None:
        for _ in self._threads:
            self._inbox.put(None)

    def _serve(self) -> None:
        while True:
            running = self._inbox.get()
            if running is None:
                return
            self._done(run_sync(running))
            self._idle.release()


def run_sync(running: Running) -> Finished:
    """Run one sync handler with its job context set; never raises."""
    token = set_current(running.context)
    try:
        close_old_connections()
        value = running.definition.func(**running.job.payload)
        return Finished(running, True, value)
    except BaseException as exc:
        return Finished(running, False, error=exc)
    finally:
        close_old_connections()
        reset_current(token)


class AsyncSlots:
    """One event loop in its own thread; async handlers run as tasks on it."""

    def __init__(self, done: Callable[[Finished], None], name: str) -> None:
        self._done = done
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=f"{name}-asyncio", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, running: Running) -> None:
        def start() -> None:
            context = contextvars.copy_context()
            context.run(set_current, running.context)
            running.task = self.loop.create_task(self._run(running), context=context)

        self.loop.call_soon_threadsafe(start)

    async def _run(self, running: Running) -> None:
        timeout = running.job.timeout
        try:
            async with asyncio.timeout(timeout) as scope:
                value = await running.definition.func(**running.job.payload)
            self._done(Finished(running, True, value))
        except TimeoutError as exc:
            error: BaseException = exc
            if scope.expired():
                error = JobTimeout(f"the attempt ran longer than its timeout of {timeout} s")
                running.kind = "timed_out"
            self._done(Finished(running, False, error=error))
        except BaseException as exc:
            self._done(Finished(running, False, error=exc))

    def cancel(self, running: Running) -> None:
        def cancel() -> None:
            if running.task is not None:
                running.task.cancel()

        self.loop.call_soon_threadsafe(cancel)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
