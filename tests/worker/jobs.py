"""Handlers for the in-process worker tests, on queues of their own.

A test opens a named gate to let the runs waiting on it return, so it
decides when each handler ends without sleeping.
"""

from __future__ import annotations

import asyncio
import threading
import time

import django_workhorse as workhorse

_gates: dict[str, threading.Event] = {}
_gates_lock = threading.Lock()


def gate(name: str) -> threading.Event:
    """The event runs of ``gated(gate=name)`` wait for."""
    with _gates_lock:
        return _gates.setdefault(name, threading.Event())


@workhorse.job(name="inproc.gated", queue="inproc.gated", max_attempts=1)
def gated(gate_name: str = "", value: int = 0) -> int:
    """Returns ``value`` once its gate opens (at once without a gate)."""
    if gate_name and not gate(gate_name).wait(60):
        raise TimeoutError(f"gate {gate_name!r} was never opened")
    return value


@workhorse.job(
    name="inproc.chaos",
    queue="inproc.chaos",
    max_attempts=3,
    max_stalled=1000,
    backoff=workhorse.fixed(0),
)
def chaos(seconds: float) -> float:
    """Busy for ``seconds``, looking for a cancel now and then."""
    context = workhorse.current_job()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        context.raise_if_canceled()
        time.sleep(0.0005)
    context.raise_if_canceled()
    return seconds


@workhorse.job(
    name="inproc.achaos",
    queue="inproc.chaos",
    max_attempts=3,
    max_stalled=1000,
    backoff=workhorse.fixed(0),
)
async def achaos(seconds: float) -> float:
    await asyncio.sleep(seconds)
    return seconds
