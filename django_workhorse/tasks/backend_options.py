"""The ``OPTIONS`` of a ``WorkhorseBackend``, checked key by key.

Django's Tasks API has no word for attempts, timeouts, backoff or stalls;
these options give every task of a backend workhorse defaults for them (a
task can still set its own, see ``WorkhorseTask``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.backoff import BackoffSpec, exponential, fixed
from ..core.conf import duration_seconds
from ..core.job_options import BACKEND_OPTIONS
from ..core.limits import (
    MAX_ATTEMPTS_MAX,
    MAX_ATTEMPTS_MIN,
    MAX_STALLED_MAX,
    MAX_STALLED_MIN,
    duration_problem,
    shown,
    whole_problem,
)

OPTION_KEYS = tuple(BACKEND_OPTIONS)
"""Every key ``OPTIONS`` may hold, each the default of a job option
(``job_options.BACKEND_OPTIONS``); docs/django-tasks.md explains each."""


@dataclass(frozen=True)
class BackendOptions:
    """The validated ``OPTIONS``; None where the workhorse default applies."""

    database: str | None = None
    max_attempts: int | None = None
    timeout: float | None = None
    max_stalled: int | None = None
    backoff: BackoffSpec = None


def backoff_from(value: Any) -> tuple[BackoffSpec, str | None]:
    """A backoff dict as a backoff, or the problem with it: ``{"kind":
    "exponential", ...}`` takes the keyword arguments of ``exponential`` (its
    defaults are the ``backoff`` of ``sql/workhorse_job_defaults_v1.sql``),
    ``{"kind": "fixed", "delay": ...}`` those of ``fixed``."""
    if not isinstance(value, Mapping):
        return None, f"must be a dict with a 'kind' of 'exponential' or 'fixed', got {shown(value)}"
    args = dict(value)
    kind = args.pop("kind", None)
    makers: dict[str, Callable[..., BackoffSpec]] = {"exponential": exponential, "fixed": fixed}
    if not isinstance(kind, str) or kind not in makers:
        return None, f"'kind' must be 'exponential' or 'fixed', got {shown(kind)}"
    try:
        return makers[kind](**args), None
    except (TypeError, ValueError) as exc:
        return None, f"is not a valid {kind} backoff: {exc}"


def option_problems(options: Any, databases: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(key, problem)`` for every bad entry of ``OPTIONS``; empty when all is well."""
    if not isinstance(options, Mapping):
        return [("", f"OPTIONS must be a dict, got {type(options).__name__}")]
    problems: list[tuple[str, str]] = []
    for key in sorted(set(options) - set(OPTION_KEYS)):
        problems.append((key, f"is not an option; known: {', '.join(OPTION_KEYS)}"))
    database = options.get("DATABASE")
    if database is not None and (not isinstance(database, str) or database not in databases):
        problems.append(("DATABASE", f"{shown(database)} is not an alias of settings.DATABASES"))
    if "MAX_ATTEMPTS" in options:
        problem = whole_problem(
            "MAX_ATTEMPTS", options["MAX_ATTEMPTS"], MAX_ATTEMPTS_MIN, MAX_ATTEMPTS_MAX
        )
        if problem:
            problems.append(("MAX_ATTEMPTS", problem))
    if "MAX_STALLED" in options:
        problem = whole_problem(
            "MAX_STALLED", options["MAX_STALLED"], MAX_STALLED_MIN, MAX_STALLED_MAX
        )
        if problem:
            problems.append(("MAX_STALLED", problem))
    if options.get("TIMEOUT") is not None:
        problem = duration_problem("TIMEOUT", options["TIMEOUT"], positive=True)
        if problem:
            problems.append(("TIMEOUT", problem))
    if options.get("BACKOFF") is not None:
        _, problem = backoff_from(options["BACKOFF"])
        if problem:
            problems.append(("BACKOFF", problem))
    return problems


def parse_options(options: Mapping[str, Any]) -> BackendOptions:
    """``OPTIONS`` as values; call only once ``option_problems`` found none."""
    backoff = None
    if options.get("BACKOFF") is not None:
        backoff, _ = backoff_from(options["BACKOFF"])
    timeout = options.get("TIMEOUT")
    return BackendOptions(
        database=options.get("DATABASE"),
        max_attempts=options.get("MAX_ATTEMPTS"),
        timeout=None if timeout is None else duration_seconds(timeout),
        max_stalled=options.get("MAX_STALLED"),
        backoff=backoff,
    )
