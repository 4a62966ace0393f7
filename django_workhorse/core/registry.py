"""Which job names exist in this process, and the handler behind each.

The table is the process's, read and written from any thread (a worker's
claim loop looks names up while a Django task registers itself on first
use): every change of ``_jobs``, ``_listeners``, ``_resolvers`` and
``_explainers`` happens under ``_lock`` (tests/unit/test_lock_rule.py checks
it), and readers take a copy. Listeners and resolvers are called outside the lock, since they may
register in turn.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..exceptions import JobAlreadyRegistered, UnknownJobError
from .limits import shown

if TYPE_CHECKING:
    from .definitions import JobDefinition

_lock = threading.Lock()
_jobs: dict[str, JobDefinition[..., Any]] = {}
_listeners: list[Callable[[JobDefinition[..., Any]], object]] = []
_resolvers: list[Callable[[str], JobDefinition[..., Any] | None]] = []
_explainers: list[Callable[[str], str | None]] = []
"""Each says why a resolver could not find a name (its module did not import), or None."""


class JobTable(dict[str, "JobDefinition[..., Any]"]):
    """The jobs by name, as ``all_jobs()`` returns them.

    ``get`` of a name nobody registered asks the resolvers before giving up:
    a job type defined elsewhere than ``jobs.py`` (a Django ``@task``, found
    by its import path) registers itself on first use, in the worker too.
    """

    def get(  # type: ignore[override]  # a name (str) only; asks the resolvers
        self, name: str, default: JobDefinition[..., Any] | None = None
    ) -> JobDefinition[..., Any] | None:
        found = dict.get(self, name)
        if found is None:
            found = resolve(name)
        return found if found is not None else default


def register(definition: JobDefinition[..., Any]) -> None:
    """Register a job; a different handler under a taken name is an error.

    Registering the same function again (a module imported twice) is allowed.
    """
    with _lock:
        existing = _jobs.get(definition.name)
        if existing is not None and existing.func is not definition.func:
            same_origin = (existing.func.__module__, existing.func.__qualname__) == (
                definition.func.__module__,
                definition.func.__qualname__,
            )
            if not same_origin:
                raise JobAlreadyRegistered(
                    f"job name {definition.name!r} is already taken by "
                    f"{existing.func.__module__}.{existing.func.__qualname__}; give "
                    f"{definition.func.__module__}.{definition.func.__qualname__} another name "
                    "with @workhorse.job(name=...)"
                )
        _jobs[definition.name] = definition
        listeners = list(_listeners)
    for listener in listeners:
        listener(definition)


def get(name: str) -> JobDefinition[..., Any]:
    """The job registered under ``name``, or UnknownJobError listing what exists."""
    if not isinstance(name, str):
        # Checked first: the resolvers read a name as an import path.
        raise UnknownJobError(
            f"a job name is a string such as 'myapp.jobs.send_invoice', got "
            f"{type(name).__name__} {shown(name)}"
        )
    try:
        return _jobs.get(name) or _resolve_or_raise(name)
    except KeyError:
        why = next(filter(None, (explain(name) for explain in list(_explainers))), None)
        fix = (
            f"its module could not be imported ({why}): fix that import"
            if why
            else "define it with @workhorse.job in an app's jobs.py and make sure the app is in "
            "INSTALLED_APPS"
        )
        raise UnknownJobError(
            f"no job named {shown(name, 210)} is registered ({_known_near(name)}); {fix}"
        ) from None


def _known_near(name: str, listed: int = 10) -> str:
    """The registered names for a message: all of them when there are few,
    else how many there are and the closest to ``name``."""
    with _lock:
        names = sorted(_jobs)
    if len(names) <= listed:
        return "registered: " + (", ".join(names) or "none")
    close = difflib.get_close_matches(name[:210], names, n=5, cutoff=0.6)
    nearest = f"; the closest: {', '.join(close)}" if close else ""
    return f"{len(names)} registered{nearest}"


def _resolve_or_raise(name: str) -> JobDefinition[..., Any]:
    found = resolve(name)
    if found is None:
        raise KeyError(name)
    return found


def is_registered(name: str) -> bool:
    """Whether code registered a job under ``name`` (the resolvers are not
    asked: this is a look-up, for paths that run per job)."""
    return name in _jobs


def all_jobs() -> JobTable:
    """A copy of every registered job by name (``get`` also tries the resolvers)."""
    with _lock:
        return JobTable(_jobs)


def add_resolver(resolver: Callable[[str], JobDefinition[..., Any] | None]) -> None:
    """Ask ``resolver(name)`` for a job nobody registered under ``name``; it
    registers and returns the definition, or returns None. Added once."""
    with _lock:
        if resolver not in _resolvers:
            _resolvers.append(resolver)


def add_explainer(explainer: Callable[[str], str | None]) -> None:
    """Ask ``explainer(name)`` why a name no resolver found is unknown, for
    ``get``'s error. Added once."""
    with _lock:
        if explainer not in _explainers:
            _explainers.append(explainer)


def resolve(name: str) -> JobDefinition[..., Any] | None:
    """The definition a resolver finds for an unregistered ``name``, or None."""
    for resolver in list(_resolvers):
        found = resolver(name)
        if found is not None:
            return found
    return None


def on_register(listener: Callable[[JobDefinition[..., Any]], object]) -> None:
    """Call ``listener(definition)`` for each job registered from now on."""
    with _lock:
        _listeners.append(listener)


def remove_listener(listener: Callable[[JobDefinition[..., Any]], object]) -> None:
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)


def known_queues(alias: str, configured: Iterable[str]) -> list[str]:
    """The queues of the jobs registered for database ``alias``, with the
    ``configured`` ones (those ``WORKHORSE["QUEUES"]`` names), sorted: what a
    worker of that database serves by default, and what the admin knows
    before any job was enqueued."""
    with _lock:
        definitions = list(_jobs.values())
    names = {d.queue for d in definitions if d.using == alias}
    names.update(configured)
    return sorted(names)
