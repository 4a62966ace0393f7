"""What one worker process serves: its queues, slots, database and id.

``resolve_options`` checks the choices of ``runworker`` (or a test) against
the registry and the settings before anything starts, so a mistake is one
clear error at start-up rather than a job failing later.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from secrets import token_hex
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from ..core import registry, schedules
from ..core.conf import WorkhorseSettings, get_settings, import_callable
from ..core.definitions import JobDefinition
from ..core.limits import queue_name_problem
from ..exceptions import StoreMismatchError
from ..operations.servable import servable_queues, unknown_queues_note, unknown_queues_problem


@dataclass
class WorkerOptions:
    """What one worker process does; built from settings and ``runworker`` flags."""

    alias: str
    queues: list[str]
    concurrency: dict[str, int]
    worker_id: str
    settings: WorkhorseSettings
    burst: bool = False
    max_jobs: int | None = None
    """Stop claiming after this many jobs were claimed, finish them, exit 0."""
    max_seconds: float | None = None
    """Stop claiming after this many seconds, finish what runs, exit 0."""
    on_job_failure: str | None = None
    on_job_canceled: str | None = None
    notes: tuple[str, ...] = ()
    """What the worker says once at start (a served queue no job it knows uses)."""


def make_worker_id(base: str | None = None) -> str:
    """Unique per process run: ``<base or host>:<pid>:<random>``."""
    return f"{base or socket.gethostname()}:{os.getpid()}:{token_hex(3)}"


def resolve_options(
    *,
    alias: str | None = None,
    queues: Sequence[str] | None = None,
    concurrency: int | None = None,
    worker_id: str | None = None,
    burst: bool = False,
    settings: WorkhorseSettings | None = None,
    exclude: Sequence[str] | None = None,
    max_jobs: int | None = None,
    max_seconds: float | None = None,
) -> WorkerOptions:
    """Check the worker's choices against the registry and settings.

    ``exclude`` takes queues off the default set (``--exclude-queues``).
    A queue of ``queues`` that nothing known uses is served all the same, with
    a note (``WorkerOptions.notes``) naming the known queues it looks like.
    Raises ImproperlyConfigured (unknown excluded queue, bad alias) or StoreMismatchError
    (a job of a served queue is bound to another alias) with a message that
    says what to change.
    """
    settings = settings or get_settings()
    alias = alias if alias is not None else settings.database
    from django.db import connections

    if alias not in connections.databases:
        raise ImproperlyConfigured(
            f"database {alias!r} is not an alias of settings.DATABASES "
            f"({', '.join(connections.databases)})"
        )
    available = servable_queues(alias, settings)
    notes: list[str] = []
    if queues:
        for name in queues:
            if problem := queue_name_problem(name):
                raise ImproperlyConfigured(problem)
        if note := unknown_queues_note(alias, queues, settings):
            notes.append(note)
        served = list(dict.fromkeys(queues))
    else:
        excluded = list(exclude or ())
        if problem := unknown_queues_problem(alias, excluded, settings):
            raise ImproperlyConfigured(f"--exclude-queues: {problem}")
        served = [q for q in available if q not in excluded]
    if not served:
        raise ImproperlyConfigured(
            f"no queues to serve for database {alias!r}: --exclude-queues leaves none of "
            f"{', '.join(available)}"
        )
    for definition in registry.all_jobs().values():
        check_store(definition, alias, served)
    default = concurrency if concurrency is not None else settings.concurrency
    slots: dict[str, int] = {}
    for name in served:
        configured = settings.queues.get(name, {}).get("concurrency")
        from_job = next(
            (
                d.concurrency
                for d in registry.all_jobs().values()
                if d.queue == name and d.concurrency is not None
            ),
            None,
        )
        slots[name] = configured or from_job or default or 1
    for hook in (settings.on_job_failure, settings.on_job_canceled):
        if hook:
            import_callable(hook)  # refuse a bad path before starting
    schedules.declared(alias, settings.schedules)  # refuse a bad schedule before starting
    return WorkerOptions(
        alias=alias,
        queues=served,
        concurrency=slots,
        worker_id=make_worker_id(worker_id or settings.worker_id),
        settings=settings,
        burst=burst,
        max_jobs=max_jobs,
        max_seconds=max_seconds,
        on_job_failure=settings.on_job_failure,
        on_job_canceled=settings.on_job_canceled,
        notes=tuple(notes),
    )


def check_store(definition: JobDefinition[..., Any], alias: str, served: Iterable[str]) -> None:
    """A job of a queue this worker serves must live in the worker's database."""
    if definition.queue in served and definition.using != alias:
        raise StoreMismatchError(
            f"job {definition.name!r} is bound to database {definition.using!r} but this "
            f"worker serves queue {definition.queue!r} on database {alias!r}: run a worker "
            f"with --database {definition.using}, or move the job to another queue"
        )
