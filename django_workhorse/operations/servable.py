"""Which queues a worker of one database may serve, for ``runworker`` and
``run_jobs`` alike: a queue one of them accepts, the other accepts too, so
a test suite that passes does not hide a production worker that will not
start."""

from __future__ import annotations

from collections.abc import Iterable

from ..core import registry
from ..core.conf import WorkhorseSettings, job_defaults
from .unserved import close_matches

BACKEND_PATHS = frozenset(
    {"django_workhorse.tasks.WorkhorseBackend", "django_workhorse.tasks.backend.WorkhorseBackend"}
)
"""The two import paths of the workhorse backend class."""


def uses_tasks_backend() -> bool:
    """Whether ``settings.TASKS`` names the workhorse backend, by either of
    its paths or as a project's subclass of it."""
    from django.conf import settings

    configured = getattr(settings, "TASKS", None) or {}
    return any(
        isinstance(params, dict) and is_workhorse_backend(params.get("BACKEND"))
        for params in configured.values()
    )


def is_workhorse_backend(path: object) -> bool:
    """Whether the ``BACKEND`` path ``path`` leads to the workhorse backend or
    a subclass. Another path is imported to tell (as Django will, to use it);
    its class's ancestry is read by name, so the Tasks API that the
    workhorse backend needs is not imported for a project without it."""
    if path in BACKEND_PATHS:
        return True
    if not isinstance(path, str):
        return False
    from django.utils.module_loading import import_string

    try:
        backend = import_string(path)
    except Exception:  # Django reports a bad BACKEND when the backend is used
        return False
    return any(
        f"{ancestor.__module__}.{ancestor.__qualname__}" in BACKEND_PATHS
        for ancestor in getattr(backend, "__mro__", ())
    )


def task_queues(alias: str) -> set[str]:
    """The queues ``TASKS[...]["QUEUES"]`` names for every workhorse backend
    whose jobs live in database ``alias``."""
    if not uses_tasks_backend():
        return set()  # and the Tasks API may not even be importable
    from ..tasks.backend import workhorse_backends

    names: set[str] = set()
    for backend in workhorse_backends():
        try:
            database = backend.database
        except Exception:  # a bad OPTIONS value: manage.py check names it
            continue
        if database == alias:
            names.update(q for q in backend.queues if isinstance(q, str))
    return names


def any_task_queue(alias: str) -> bool:
    """Whether a workhorse Tasks backend whose jobs live in ``alias`` has an
    empty ``QUEUES`` (Django's "any queue"): its tasks may be enqueued on a
    queue no setting names, so a worker may be asked to serve any."""
    if not uses_tasks_backend():
        return False
    from ..tasks.backend import workhorse_backends

    for backend in workhorse_backends():
        try:
            database = backend.database
        except Exception:  # a bad OPTIONS value: manage.py check names it
            continue
        if database == alias and not backend.queues:
            return True
    return False


def servable_queues(alias: str, settings: WorkhorseSettings) -> list[str]:
    """Sorted: the queues of the jobs registered for ``alias``, those
    ``WORKHORSE['QUEUES']`` names, those of the Tasks backends on ``alias``,
    and, for ``WORKHORSE['DATABASE']``, ``WORKHORSE['DEFAULT_QUEUE']`` (where
    a job defined outside the modules app loading imports goes unless it
    names another)."""
    names = set(registry.known_queues(alias, settings.queues))
    names.update(task_queues(alias))
    if alias == settings.database:  # where a job bound to no alias goes
        names.add(job_defaults().queue)
    return sorted(names)


def unknown_queues_note(
    alias: str, queues: Iterable[str], settings: WorkhorseSettings
) -> str | None:
    """What a worker told to serve ``queues`` says once when some are not
    among ``servable_queues`` (None when all are, or beside a Tasks backend
    that allows any queue): it serves them all the same, since a job may be
    on any queue (``.options(queue=...)``, SQL, a job found by its path),
    and names the known queues that look like each, in case of a typo."""
    if any_task_queue(alias):
        return None
    available = servable_queues(alias, settings)
    unknown = [q for q in queues if q not in available]
    if not unknown:
        return None
    looks_like = []
    for queue in unknown:
        close = close_matches(queue, available)
        if close:
            looks_like.append(f"{queue!r} looks like {' or '.join(repr(c) for c in close)}")
    typo = f"; if that is a typo: {', '.join(looks_like)}" if looks_like else ""
    return (
        f"serving queue(s) {', '.join(unknown)} as told, though no job registered for database "
        f"{alias!r} uses them and neither WORKHORSE['QUEUES'], WORKHORSE['DEFAULT_QUEUE'] nor "
        f"a TASKS backend's QUEUES names them (known: {', '.join(available) or 'none'}){typo}"
    )


def unknown_queues_problem(
    alias: str, queues: Iterable[str], settings: WorkhorseSettings
) -> str | None:
    """The message that refuses ``queues`` not among ``servable_queues``, or None
    (always None beside a Tasks backend that allows any queue)."""
    if any_task_queue(alias):
        return None
    available = servable_queues(alias, settings)
    unknown = [q for q in queues if q not in available]
    if not unknown:
        return None
    return (
        f"unknown queue(s) {', '.join(unknown)}: no job registered for database {alias!r} "
        "uses them, and neither WORKHORSE['QUEUES'], WORKHORSE['DEFAULT_QUEUE'] nor a TASKS "
        f"backend's QUEUES names them (known: {', '.join(available) or 'none'})"
    )
