"""Sample jobs used by the demo and the tests."""

import asyncio
import os
import time
from pathlib import Path

import django_workhorse as workhorse


@workhorse.job(queue="default")
def add(a: int, b: int) -> int:
    """Adds two numbers: the smallest job that returns a result."""
    return a + b


@workhorse.job(queue="email", max_attempts=3, backoff=workhorse.fixed(0.2))
def send_welcome_email(user_id: int, flaky: int = 0) -> dict:
    """Pretends to send an email; fails ``flaky`` times before it succeeds."""
    ctx = workhorse.current_job()
    if ctx.attempt <= flaky:
        raise ConnectionError(f"SMTP server busy (attempt {ctx.attempt})")
    return {"sent_to": user_id, "attempt": ctx.attempt}


@workhorse.job(queue="default")
def sleep_for(seconds: float) -> float:
    """Sleeps; long jobs for shutdown and recovery demos."""
    time.sleep(seconds)
    return seconds


@workhorse.job(queue="bench")
def noop() -> None:
    """Does nothing: the benchmarks measure the queue, not the handler."""


@workhorse.job(queue="bench-async")
async def anoop() -> None:
    """The async no-op: compared with peers whose benchmark handlers are async."""


@workhorse.job(queue="bench-cancel")
async def await_cancel(seconds: float = 3600) -> None:
    """Awaits until cancelled: the cancel-latency benchmark cancels it."""
    await asyncio.sleep(seconds)


@workhorse.job(queue="bench-latency")
def clock() -> float:
    """Returns when it started (epoch seconds): pickup latency for the benchmark."""
    return time.time()


@workhorse.job(queue="bench-recovery")
def hang_first_run(marker: str) -> str:
    """Hangs on its first run (for kill-and-recover runs), returns at once after."""
    path = Path(marker)
    if not path.exists():
        path.write_text(str(os.getpid()))
        time.sleep(600)
    return "recovered"


@workhorse.job(queue="bench-checkpoints")
def ten_checkpoints() -> int:
    """Records ten trivial stages: the benchmark measures the checkpoint writes."""
    ctx = workhorse.current_job()
    return sum(ctx.checkpoint(f"stage-{i}", lambda i=i: i) for i in range(10))


@workhorse.job(queue="bench-sleep")
def sleep_once() -> None:
    """Sleeps once for 0 s, then returns: the benchmark's durable-sleep round trip."""
    workhorse.current_job().sleep("nap", 0)
