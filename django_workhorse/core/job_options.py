"""The options of a job, declared once: their names, their types, their defaults.

``@workhorse.job(...)`` and ``JobDefinition`` take ``JobDefinitionOptions``;
``.options(...)`` takes ``JobOptions``; both are ``TypedDict``s unpacked into
keyword arguments (``**options: Unpack[...]``), so a type checker checks each
name and value against these declarations, and the names each call accepts
at run time are read from them too. The options both take (queue, priority,
attempts, timeout, stalls) are declared once, in ``SharedOptions``.

The Django Tasks backend takes the same options under the names below:
``TASK_ENQUEUE_OPTIONS`` are the per-enqueue options Django's ``Task`` has no
word for (``WorkhorseTask.using(...)``), ``TASK_DEFINITION_OPTIONS`` those a
task can set in its decorator only, and ``BACKEND_OPTIONS`` maps each key of
a backend's ``OPTIONS`` to the option it gives every task of the backend.
``tests/unit/test_job_options_declared_once.py`` fails when a name is added
here but not taken by one of them, or the other way round.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from .backoff import BackoffSpec
from .defaults import JOB_DEFAULTS

if TYPE_CHECKING:
    from .handles import JobHandle


class SharedOptions(TypedDict, total=False):
    """The options of both the decorator and ``.options(...)``: the decorator's
    values are the job's defaults, which ``.options`` overrides per enqueue."""

    queue: str | None
    """The queue; None takes ``WORKHORSE['DEFAULT_QUEUE']`` as it is at the enqueue."""
    priority: int
    """-100 to 100, higher first."""
    max_attempts: int | None
    """Attempts before the job ends failed; None takes ``WORKHORSE['DEFAULT_MAX_ATTEMPTS']``."""
    timeout: float | timedelta | None
    """Seconds (or a timedelta) an attempt may run before it fails as timed out."""
    max_stalled: int | None
    """Times a run may be lost with its worker; None takes ``WORKHORSE['MAX_STALLED_COUNT']``."""


class JobOptions(SharedOptions, total=False):
    """The keyword arguments of ``.options(...)``: per-enqueue choices."""

    delay: float | timedelta | None
    """Seconds (or a timedelta) before the job is due; not with ``run_at``."""
    run_at: datetime | None
    """When the job is due (an aware datetime); not with ``delay``."""
    idempotency_key: str | None
    """A second enqueue with the same key returns the first job."""
    depends_on: Iterable[JobHandle[Any] | int] | None
    """The job's prerequisites (handles or ids): it waits, blocked, until they settle it."""
    dependency_policy: Literal["all_succeeded", "all_finished", "any_succeeded"] | None
    """How the prerequisites settle it (docs/durable-execution.md)."""


class JobDefinitionOptions(SharedOptions, total=False):
    """The keyword arguments of ``@workhorse.job(...)``: the job's own options."""

    name: str | None
    """The job's name; None takes the handler's ``module.qualname``."""
    backoff: BackoffSpec
    """``workhorse.exponential(...)`` (the default), ``workhorse.fixed(...)`` or a callable."""
    retry_on: tuple[type[BaseException], ...] | type[BaseException]
    """Retry only on these exceptions (all, when empty)."""
    no_retry_on: tuple[type[BaseException], ...] | type[BaseException]
    """Never retry on these exceptions (they win over ``retry_on``)."""
    concurrency: int | None
    """The job's queue's slots on a worker that sets none."""
    using: str | None
    """The database alias; None takes ``WORKHORSE['DATABASE']``."""
    schedule: str | None
    """A cron expression: workers enqueue the job at each of its slots."""


ENQUEUE_OPTIONS: frozenset[str] = JobOptions.__optional_keys__
"""What ``.options(...)`` accepts."""
DEFINITION_OPTIONS: frozenset[str] = JobDefinitionOptions.__optional_keys__
"""What ``@workhorse.job(...)`` accepts."""

DEFINITION_DEFAULTS: Mapping[str, Any] = {
    **dict.fromkeys(DEFINITION_OPTIONS),
    "priority": JOB_DEFAULTS.priority,
    "retry_on": (),
    "no_retry_on": (),
}
"""The decorator's value of an option it is not given (None: decided later,
from the settings as they are when the job is enqueued)."""

TASK_WORDS: Mapping[str, str | None] = {
    "queue": "queue_name",
    "priority": "priority",
    "run_at": "run_after",
    "delay": None,
}
"""Per-enqueue options a Django ``Task`` has a word of its own for (its
``using(...)`` argument), or, for None, none: Django says when with ``run_after`` alone."""
TASK_ENQUEUE_OPTIONS: frozenset[str] = ENQUEUE_OPTIONS - TASK_WORDS.keys()
"""Per-enqueue options a ``WorkhorseTask`` adds to Django's ``using(...)``."""
TASK_DEFINITION_OPTIONS: frozenset[str] = frozenset({"backoff"})
"""Options a ``WorkhorseTask`` takes from its decorator alone."""
BACKEND_OPTIONS: Mapping[str, str] = {
    "DATABASE": "using",
    "MAX_ATTEMPTS": "max_attempts",
    "TIMEOUT": "timeout",
    "MAX_STALLED": "max_stalled",
    "BACKOFF": "backoff",
}
"""Each key of a Tasks backend's ``OPTIONS`` and the decorator option it
gives every task of the backend (a task's own value wins)."""


def unknown_options(given: Iterable[str], known: frozenset[str], where: str) -> str | None:
    """What is wrong with options ``given`` to ``where`` that accepts ``known``, or None."""
    unknown = set(given) - known
    if not unknown:
        return None
    return (
        f"unknown option(s) {', '.join(sorted(unknown))} for {where}; "
        f"known: {', '.join(sorted(known))}"
    )
