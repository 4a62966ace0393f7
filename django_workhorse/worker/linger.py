"""The linger: wait a moment for more arrivals, so that a burst is one batch.

The claim loop lingers after a slot frees, waiting for the runs still going,
so a burst of short jobs refills its slots with one claim; the writer lingers
before a batch, so a burst of results is one transaction. Both are the same
handshake: one thread waits up to ``seconds`` until a count reaches a target,
and the threads that raise the count call ``arrived`` with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

LINGER = 0.002
"""Seconds a linger waits at most: far below a pickup's latency, far above
the time a burst of short jobs needs to finish one after another."""


class Linger:
    """One waiter, any number of arriving threads.

    Outside a wait the target is 1: every arrival reports that it reached
    it, which the claim loop uses to wake up as soon as a slot frees.
    ``_target`` is written only under ``_lock`` (by the waiter); arriving
    threads read it without the lock. A stale read costs at most one wait
    of ``seconds``, never a lost arrival: the waiter checks the count after
    setting the target.
    """

    def __init__(self, seconds: float = LINGER) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()
        self._target = 1
        self._reached = threading.Event()

    def wait(self, target: int, count: Callable[[], int]) -> None:
        """Wait up to ``seconds`` until ``count()`` reaches ``target``."""
        with self._lock:
            self._target = target
            self._reached.clear()
        if count() < target:
            self._reached.wait(self.seconds)
        with self._lock:
            self._target = 1

    def arrived(self, count: int) -> bool:
        """The count is now ``count``: ends a wait that it satisfies. True
        when ``count`` reaches the target (always so outside a wait)."""
        if count < self._target:
            return False
        # Event.set takes a lock and notifies even when already set.
        if not self._reached.is_set():
            self._reached.set()
        return True
