"""Which job names exist in this process, and the handler behind each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .exceptions import JobAlreadyRegistered, UnknownJobError

if TYPE_CHECKING:
    from .definitions import JobDefinition

_jobs: dict[str, JobDefinition] = {}
_listeners: list = []


def register(definition: JobDefinition) -> None:
    """Register a job; a different handler under a taken name is an error.

    Registering the same function again (a module imported twice) is allowed.
    """
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
    for listener in list(_listeners):
        listener(definition)


def get(name: str) -> JobDefinition:
    """The job registered under ``name``, or UnknownJobError listing what exists."""
    try:
        return _jobs[name]
    except KeyError:
        known = ", ".join(sorted(_jobs)) or "none"
        raise UnknownJobError(
            f"no job named {name!r} is registered (registered: {known}); define it with "
            "@workhorse.job in an app's jobs.py and make sure the app is in INSTALLED_APPS"
        ) from None


def all_jobs() -> dict[str, JobDefinition]:
    """A copy of every registered job by name."""
    return dict(_jobs)


def on_register(listener) -> None:
    """Call ``listener(definition)`` for each job registered from now on."""
    _listeners.append(listener)


def remove_listener(listener) -> None:
    if listener in _listeners:
        _listeners.remove(listener)
