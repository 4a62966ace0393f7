"""The built-in defaults of a job's options, read from the one place they are
spelled: ``sql/workhorse_job_defaults_v1.sql``, the SQL function that the
database's own functions read.

Python reads the JSON between that file's ``$defaults$`` dollar quotes, so SQL and
Python cannot disagree; ``tests/integration/test_job_defaults.py``
checks that the installed function returns the same values and that no other
SQL or Python file spells them again. The ``WORKHORSE`` settings
``DEFAULT_QUEUE``, ``DEFAULT_MAX_ATTEMPTS`` and ``MAX_STALLED_COUNT`` default
to these values and are read when a job is enqueued.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

DEFAULTS_FILE = "workhorse_job_defaults_v1.sql"
_QUOTE = "$defaults$"


@dataclass(frozen=True)
class BackoffDefaults:
    """The default backoff: exponential, ``base * 2**(attempt-1)`` seconds
    capped at ``max``, spread by ±``jitter``."""

    base: float
    max: float
    jitter: float


@dataclass(frozen=True)
class JobDefaults:
    """A job's options when neither the job nor the settings name them."""

    queue: str
    max_attempts: int
    priority: int
    max_stalled: int
    timeout: float | None
    backoff: BackoffDefaults


def defaults_json() -> dict[str, Any]:
    """The JSON object of the defaults file, as the SQL function returns it."""
    text = resources.files("django_workhorse").joinpath("sql", DEFAULTS_FILE).read_text("utf-8")
    parts = text.split(_QUOTE)
    if len(parts) != 3:
        raise RuntimeError(f"{DEFAULTS_FILE} must hold one {_QUOTE}-quoted JSON object")
    value: dict[str, Any] = json.loads(parts[1])
    return value


def _load() -> JobDefaults:
    raw = defaults_json()
    backoff = raw["backoff"]
    if backoff.get("kind") != "exponential":
        raise RuntimeError(f"{DEFAULTS_FILE}: the default backoff must be exponential")
    return JobDefaults(
        queue=raw["queue"],
        max_attempts=raw["max_attempts"],
        priority=raw["priority"],
        max_stalled=raw["max_stalled"],
        timeout=raw["timeout"],
        backoff=BackoffDefaults(
            base=float(backoff["base"]), max=float(backoff["max"]), jitter=float(backoff["jitter"])
        ),
    )


JOB_DEFAULTS = _load()
"""The built-in defaults, read once when the package is imported."""
