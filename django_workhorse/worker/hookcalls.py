"""The ``ON_JOB_FAILURE`` and ``ON_JOB_CANCELED`` calls, and a run's
after-recorded call (a Django task's ``task_finished``), on a thread of their own.

A hook is the application's code: it may be slow, or hang on a socket with
no timeout. Called where results are written, one hanging hook left every
other job's result unwritten and its lease renewed, so no worker could take
it over. So what ends a run is recorded first, by whoever records it (the
writer, the one-slot route's claim, the stall recovery, the release at
shutdown), and only then is the hook call handed here, to run after it, in
order.

The queue is bounded (``QUEUE_SIZE``): a hook slower than the failures that
feed it cannot fill the memory; past the bound, calls are dropped, logged at
ERROR with the job ids that lost theirs. A call running longer than
``SLOW_AFTER`` seconds is logged once, with its job id, by a watchdog
thread. At shutdown the calls queued are given ``DRAIN_SECONDS`` to run;
what is left then is not called (logged with its count), so a hanging hook
never holds the process past its shutdown grace.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.db import close_old_connections

logger = logging.getLogger("django_workhorse.worker")

QUEUE_SIZE = 10_000
SLOW_AFTER = 10.0
DRAIN_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class _Call:
    job_id: int
    what: str
    call: Callable[[], object]


_STOP = object()


class HookCalls:
    """Runs hook calls in the order they were handed over, one at a time."""

    def __init__(self, name: str = "workhorse-hooks") -> None:
        self._queue: queue.Queue[_Call | object] = queue.Queue(maxsize=QUEUE_SIZE)
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._watchdog = threading.Thread(target=self._watch, name=f"{name}-watch", daemon=True)
        self._current: tuple[_Call, float] | None = None
        """The call running and when it started: set by the hook thread only."""
        self._reported: _Call | None = None
        """The last call reported slow: the watchdog's only."""
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._dropped = 0
        """Calls dropped on a full queue: changed under ``_lock`` (several
        threads hand calls over)."""
        self._started = False

    def start(self) -> None:
        self._started = True
        self._thread.start()
        self._watchdog.start()

    def submit(self, job_id: int, what: str, call: Callable[[], object]) -> None:
        """Queue ``call`` (the ``what`` hook for ``job_id``); never blocks.

        Called once the run's end is recorded. A full queue drops the call:
        the callers (the writer, the heartbeat's stall recovery, the claim
        loop, a handler's thread) must not wait for a hook.
        """
        try:
            self._queue.put_nowait(_Call(job_id, what, call))
        except queue.Full:
            with self._lock:
                self._dropped += 1
                dropped = self._dropped
            logger.error(
                "workhorse: %s hook calls are waiting behind a slow hook; the %s hook is not "
                "called for job %s (%s dropped so far)",
                QUEUE_SIZE,
                what,
                job_id,
                dropped,
            )

    def stop(self, timeout: float = DRAIN_SECONDS) -> None:
        """Let the queued calls run for up to ``timeout`` seconds, then end.

        What is still queued (behind a hanging hook, say) is not called: the
        results are recorded already, only the notification is lost.
        """
        if not self._started:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self._queue.put(_STOP, timeout=max(0.0, deadline - time.monotonic()))
                break
            except queue.Full:
                continue
        self._thread.join(max(0.0, deadline - time.monotonic()))
        self._closed.set()
        if self._thread.is_alive():
            current = self._current
            logger.warning(
                "workhorse: stopping with %s hook call(s) not made%s; the jobs' results are "
                "recorded",
                self._queue.qsize(),
                f" behind the {current[0].what} hook still running for job {current[0].job_id}"
                if current is not None
                else "",
            )
        self._watchdog.join(1.0)

    def _serve(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            assert isinstance(item, _Call)
            started = time.monotonic()
            self._current = (item, started)
            try:
                item.call()  # the call wrappers log what a hook raises
            except BaseException:
                logger.exception(
                    "workhorse: the %s hook call for job %s failed", item.what, item.job_id
                )
            finally:
                self._current = None
            if self._reported is item:
                logger.warning(
                    "workhorse: the %s hook for job %s returned after %.1f s",
                    item.what,
                    item.job_id,
                    time.monotonic() - started,
                )
            if self._queue.empty():
                # A hook may use the ORM on this thread: treat a run of calls
                # as one request and let Django close what it opened.
                close_old_connections()

    def _watch(self) -> None:
        while not self._closed.wait(min(1.0, SLOW_AFTER)):
            current = self._current
            if current is None or current[0] is self._reported:
                continue
            call, started = current
            running = time.monotonic() - started
            if running >= SLOW_AFTER:
                self._reported = call
                logger.warning(
                    "workhorse: the %s hook for job %s has run for %.0f s and holds up the "
                    "hook calls queued behind it (%s); results, heartbeats and claims go on",
                    call.what,
                    call.job_id,
                    running,
                    self._queue.qsize(),
                )
