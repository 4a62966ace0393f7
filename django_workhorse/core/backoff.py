"""Retry delays. Exponential and fixed policies are stored with the job and
computed by PostgreSQL; a custom callable is computed by the worker."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..exceptions import InvalidJobOptionError
from .conf import duration_seconds
from .defaults import JOB_DEFAULTS
from .limits import MAX_DURATION_SECONDS, duration_problem, shown


@dataclass(frozen=True)
class Exponential:
    """``base * 2**(attempt-1)`` seconds, capped at ``max``, spread by ±``jitter``."""

    base: float = JOB_DEFAULTS.backoff.base
    max: float = JOB_DEFAULTS.backoff.max
    jitter: float = JOB_DEFAULTS.backoff.jitter

    def policy(self) -> dict[str, Any]:
        return {"kind": "exponential", "base": self.base, "max": self.max, "jitter": self.jitter}


@dataclass(frozen=True)
class Fixed:
    """The same delay after every failed attempt."""

    delay: float

    def policy(self) -> dict[str, Any]:
        return {"kind": "fixed", "delay": self.delay}


def exponential(
    base: float | timedelta = JOB_DEFAULTS.backoff.base,
    max: float | timedelta = JOB_DEFAULTS.backoff.max,
    jitter: float = JOB_DEFAULTS.backoff.jitter,
) -> Exponential:
    """Exponential backoff with jitter (the default: 1 s, 2 s, 4 s ... capped at 1 h,
    spread by ±10 %; the values of ``defaults.JOB_DEFAULTS.backoff``)."""
    for field, value in (("base", base), ("max", max)):
        if problem := duration_problem(f"backoff {field}", value, positive=False):
            raise InvalidJobOptionError(problem)
    if isinstance(jitter, bool) or not isinstance(jitter, int | float) or not 0 <= jitter <= 1:
        raise InvalidJobOptionError(
            f"backoff jitter must be a number from 0 to 1, got {shown(jitter)}"
        )
    return Exponential(duration_seconds(base), duration_seconds(max), float(jitter))


def fixed(delay: float | timedelta) -> Fixed:
    """Retry after the same delay each time."""
    if problem := duration_problem("backoff delay", delay, positive=False):
        raise InvalidJobOptionError(problem)
    return Fixed(duration_seconds(delay))


BackoffSpec = Exponential | Fixed | Callable[[int], Any] | None


def policy_of(backoff: BackoffSpec) -> dict[str, Any]:
    """The JSON policy stored with the job; a callable is marked 'custom'."""
    if backoff is None:
        return Exponential().policy()
    if isinstance(backoff, Exponential | Fixed):
        return backoff.policy()
    if callable(backoff):
        # The worker computes the delay; the stored fallback keeps a job
        # retrying sensibly if a worker without the callable ever fails it.
        return {**Exponential().policy(), "custom": True}
    raise InvalidJobOptionError(
        "backoff must be workhorse.exponential(...), workhorse.fixed(...), or a callable "
        f"taking the attempt number and returning seconds; got {shown(backoff)}"
    )


def custom_delay(backoff: BackoffSpec, attempt: int) -> float | None:
    """Seconds from a custom backoff callable, or None for stored policies;
    clamped to 0 .. MAX_DURATION_SECONDS (ValueError for NaN or a non-number)."""
    if backoff is None or isinstance(backoff, Exponential | Fixed):
        return None
    seconds = duration_seconds(backoff(attempt))
    return min(max(0.0, seconds), float(MAX_DURATION_SECONDS))
