"""Sample jobs used by the demo and the tests."""

import time

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
