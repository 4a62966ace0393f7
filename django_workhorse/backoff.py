"""Retry delays. Exponential and fixed policies are stored with the job and
computed by PostgreSQL; a custom callable is computed by the worker."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .conf import duration_seconds
from .exceptions import InvalidJobOptionError


@dataclass(frozen=True)
class Exponential:
    """``base * 2**(attempt-1)`` seconds, capped at ``max``, spread by ±``jitter``."""

    base: float = 1.0
    max: float = 3600.0
    jitter: float = 0.1

    def policy(self) -> dict[str, Any]:
        return {"kind": "exponential", "base": self.base, "max": self.max, "jitter": self.jitter}


@dataclass(frozen=True)
class Fixed:
    """The same delay after every failed attempt."""

    delay: float

    def policy(self) -> dict[str, Any]:
        return {"kind": "fixed", "delay": self.delay}


def exponential(base: Any = 1.0, max: Any = 3600.0, jitter: float = 0.1) -> Exponential:
    """Exponential backoff with jitter (the default: 1 s, 2 s, 4 s ... capped at 1 h)."""
    base_s, max_s = duration_seconds(base), duration_seconds(max)
    if base_s < 0 or max_s < 0 or not 0 <= jitter <= 1:
        raise InvalidJobOptionError(
            "backoff: base and max must be >= 0 seconds and jitter between 0 and 1"
        )
    return Exponential(base_s, max_s, float(jitter))


def fixed(delay: Any) -> Fixed:
    """Retry after the same delay each time."""
    seconds = duration_seconds(delay)
    if seconds < 0:
        raise InvalidJobOptionError("backoff: the fixed delay must be >= 0 seconds")
    return Fixed(seconds)


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
        f"taking the attempt number and returning seconds; got {backoff!r}"
    )


def custom_delay(backoff: BackoffSpec, attempt: int) -> float | None:
    """Seconds from a custom backoff callable, or None for stored policies."""
    if backoff is None or isinstance(backoff, Exponential | Fixed):
        return None
    return max(0.0, duration_seconds(backoff(attempt)))
