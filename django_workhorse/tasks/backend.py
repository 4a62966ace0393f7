"""``WorkhorseBackend``: Django's Tasks API, stored and run by workhorse.

A ``@task`` enqueued through this backend becomes a workhorse job named by
the task's import path (``task.module_path``), in the caller's transaction,
and ``runworker`` runs it like any job. Nothing here imports models: Django
builds backends while user modules are still importing.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from inspect import iscoroutinefunction
from typing import Any, cast

from django.apps import apps
from django.core.checks import Error
from django.db import connections
from django.utils import timezone
from django.utils.module_loading import import_string

from ..core import registry
from ..core.backoff import BackoffSpec
from ..core.conf import job_defaults
from ..core.definitions import JobDefinition
from ..core.discovery import may_import
from ..core.job_options import BACKEND_OPTIONS, TASK_ENQUEUE_OPTIONS
from ..core.limits import (
    MAX_ATTEMPTS_MAX,
    MAX_ATTEMPTS_MIN,
    MAX_STALLED_MAX,
    MAX_STALLED_MIN,
    job_name_problem,
    queue_name_problem,
    shown,
    whole_problem,
)
from ..db import store
from ..exceptions import WorkhorseError
from ..operations.admin_api import Admin
from ..states import JobState
from .backend_options import BackendOptions, option_problems, parse_options
from .compat import (
    TASK_MAX_PRIORITY,
    TASK_MIN_PRIORITY,
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_backends,
    task_enqueued,
)
from .results import build_result

ID_RE = re.compile(r"[1-9][0-9]{0,18}")
"""Use with ``fullmatch``: ``match`` with ``$`` would accept a trailing newline."""
MAX_JOB_ID = 2**63 - 1

_definitions: dict[tuple[str, str], tuple[Any, Task, JobDefinition[..., Any]]] = {}
"""The job type of each task, by (backend alias, task path), with the backend
``OPTIONS`` and the task it was built from. The process's, not a backend instance's:
Django builds a backend per thread (a server's request threads, a worker's
handler threads, ``sync_to_async``) and again when ``TASKS`` changes, and a
task is the same job whichever builds it. Written under ``_definitions_lock``."""
_definitions_lock = threading.Lock()
_loaded_with_apps: set[str] = set()
"""Paths of the tasks whose module app loading imported (their ``@task`` ran
before the apps were ready): every process of the project imports them the
same way, so each of their job types counts as registered while apps load,
whichever thread builds it later."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkhorseTask(Task):
    """A Django ``Task`` with the workhorse options Django's API has no word for.

    Give them to the decorator, ``@task(max_attempts=3, timeout=60)``, or per
    enqueue through ``using(...)``; None takes the backend's ``OPTIONS``, then
    the ``WORKHORSE`` defaults.
    """

    max_attempts: int | None = None
    """Attempts before the task ends FAILED (1 to 1000)."""
    timeout: float | timedelta | None = None
    """Seconds (or a timedelta) an attempt may run before it fails as timed out."""
    max_stalled: int | None = None
    """Times a run may be lost with its worker before the task ends FAILED."""
    backoff: BackoffSpec = None
    """``workhorse.exponential(...)``, ``workhorse.fixed(...)`` or a callable; decorator only."""
    idempotency_key: str | None = None
    """A second enqueue with the same key returns the first task's result; per enqueue."""
    depends_on: tuple[Any, ...] | None = None
    """Tasks (their ``TaskResult`` or result id) or jobs (``JobHandle`` or id)
    this task waits for, blocked; per enqueue (docs/durable-execution.md)."""
    dependency_policy: str | None = None
    """``"all_succeeded"`` (the default), ``"all_finished"`` or ``"any_succeeded"``."""

    def using(
        self,
        *,
        priority: int | None = None,
        queue_name: str | None = None,
        run_after: Any = None,
        backend: str | None = None,
        max_attempts: int | None = None,
        timeout: float | timedelta | None = None,
        max_stalled: int | None = None,
        idempotency_key: str | None = None,
        depends_on: Iterable[Any] | None = None,
        dependency_policy: str | None = None,
    ) -> WorkhorseTask:
        """Django's ``using()`` plus the workhorse options that may change per enqueue."""
        task = Task.using(
            self,
            priority=priority,
            queue_name=queue_name,
            run_after=run_after,
            backend=backend,
        )
        ours = {
            "max_attempts": max_attempts,
            "timeout": timeout,
            "max_stalled": max_stalled,
            "idempotency_key": idempotency_key,
            "depends_on": prerequisites(depends_on) if depends_on is not None else None,
            "dependency_policy": dependency_policy,
        }
        changes = {key: value for key, value in ours.items() if value is not None}
        return cast("WorkhorseTask", replace(task, **changes) if changes else task)


class WorkhorseBackend(BaseTaskBackend):
    """The durable backend: ``TASKS = {"default": {"BACKEND":
    "django_workhorse.tasks.WorkhorseBackend", "QUEUES": [...], "OPTIONS": {...}}}``."""

    task_class = WorkhorseTask
    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        listed = params.get("QUEUES", ())
        if not isinstance(listed, Iterable):
            # Django makes a set of it: set(None) would raise TypeError here,
            # before check() could name the setting (workhorse.E101). Built
            # as with an empty list; check() reports the value.
            params = {**params, "QUEUES": []}
        super().__init__(alias, params)
        self._queues_setting = listed
        registry.add_resolver(resolve_task_job)

    # -- options -------------------------------------------------------------

    @property
    def workhorse_options(self) -> BackendOptions:
        """``OPTIONS`` as values; InvalidTask naming the key when one is wrong."""
        problems = option_problems(self.options, connections.databases)
        if problems:
            key, problem = problems[0]
            raise InvalidTask(
                f"TASKS[{self.alias!r}]['OPTIONS'][{key!r}] {problem}; "
                "run `manage.py check` to see every problem"
            )
        return parse_options(self.options)

    @property
    def database(self) -> str:
        """The database alias this backend's jobs live in."""
        # job_defaults, not get_settings: tasks are validated while Django
        # starts, and a bad WORKHORSE value must reach `manage.py check`.
        return self.workhorse_options.database or job_defaults()[0]

    def check(self, **kwargs: Any) -> list[Error]:
        """Bad ``QUEUES`` and ``OPTIONS`` entries, each with its key and the fix."""
        errors = []
        listed = self._queues_setting
        if not isinstance(listed, list | tuple | set | frozenset):
            # Django makes a set of whatever it is given: "default" would
            # allow the queues "d", "e", "f", ... and refuse "default".
            errors.append(
                Error(
                    f"TASKS[{self.alias!r}]['QUEUES'] must be a list of queue names such as "
                    f"['default', 'emails'], got {type(listed).__name__} {shown(listed)}",
                    hint="Write the queue names as a list in settings.TASKS.",
                    obj=f"settings.TASKS[{self.alias!r}]",
                    id="workhorse.E101",
                )
            )
            return errors
        for name in sorted(self.queues, key=str):
            if problem := queue_name_problem(name):
                errors.append(
                    Error(
                        f"TASKS[{self.alias!r}]['QUEUES'] holds {name!r}: {problem}",
                        hint="Rename the queue in settings.TASKS and in the @task decorators.",
                        obj=f"settings.TASKS[{self.alias!r}]",
                        id="workhorse.E101",
                    )
                )
        for key, problem in option_problems(self.options, connections.databases):
            where = f"TASKS[{self.alias!r}]['OPTIONS']" + (f"[{key!r}]" if key else "")
            errors.append(
                Error(
                    f"{where} {problem}",
                    hint="Fix the value in settings.TASKS; docs/django-tasks.md lists every "
                    "option.",
                    obj=f"settings.TASKS[{self.alias!r}]",
                    id="workhorse.E102",
                )
            )
        # django_workhorse missing from INSTALLED_APPS is workhorse.E103 of
        # operations/installed_check.py, registered with the package whether or not
        # django.tasks (whose checks call this one) was imported.
        return errors

    # -- tasks as jobs -------------------------------------------------------

    def validate_task(self, task: Task) -> None:
        """Django's checks, then the workhorse options of the task; registers
        the task as a job type so that ``runworker`` serves its queue."""
        if not apps.ready:
            _loaded_with_apps.add(task.module_path)
        # Django's own checks compare and convert these, and raise TypeError,
        # ValueError or AttributeError on a value of another type.
        priority = task.priority
        if not isinstance(priority, int | float) or (
            isinstance(priority, float) and not math.isfinite(priority)
        ):
            raise InvalidTask(
                f"priority must be a whole number from {TASK_MIN_PRIORITY} to "
                f"{TASK_MAX_PRIORITY}, got {type(priority).__name__} {shown(priority)}"
            )
        if task.run_after is not None and not isinstance(task.run_after, datetime):
            raise InvalidTask(
                "run_after must be an aware datetime such as timezone.now() + "
                f"timedelta(minutes=5), got {type(task.run_after).__name__} "
                f"{shown(task.run_after)}"
            )
        super().validate_task(task)
        if problem := queue_name_problem(task.queue_name):
            raise InvalidTask(f"queue_name: {problem}")
        if isinstance(task, WorkhorseTask):
            for field, low, high in (
                ("max_attempts", MAX_ATTEMPTS_MIN, MAX_ATTEMPTS_MAX),
                ("max_stalled", MAX_STALLED_MIN, MAX_STALLED_MAX),
            ):
                value = getattr(task, field)
                if value is not None and (problem := whole_problem(field, value, low, high)):
                    raise InvalidTask(problem)
        if not option_problems(self.options, connections.databases):
            self.definition_for(task)

    def definition_for(self, task: Task) -> JobDefinition[..., Any]:
        """The job type that runs ``task`` (registered on first use, then the
        same one in every thread and backend instance of the same ``OPTIONS``)."""
        name = task.module_path
        key = (self.alias, name)
        made = _definitions.get(key)
        if (
            made is not None
            and (made[0] is self.options or made[0] == self.options)
            # The task it was built from, or a using() of the task that is
            # (still) at its path: a task decorated anew is another job type.
            and (made[1] is task or task_at(name) is made[1])
        ):
            return made[2]
        options = self.workhorse_options
        ours = task if isinstance(task, WorkhorseTask) else None
        # The task's own value of each option the backend's OPTIONS give a
        # default for (job_options.BACKEND_OPTIONS), else the backend's.
        chosen: dict[str, Any] = {}
        for key_name, option in BACKEND_OPTIONS.items():
            value = getattr(ours, option, None)
            chosen[option] = value if value is not None else getattr(options, key_name.lower())
        # None: WORKHORSE['DATABASE'] as it is at each enqueue.
        chosen["using"] = options.database

        from .running import run_task, run_task_async

        try:
            definition = JobDefinition(
                run_task_async if iscoroutinefunction(task.func) else run_task,
                name=name,
                queue=task.queue_name,
                priority=int(task.priority),
                **chosen,
            )
        except WorkhorseError as exc:
            raise InvalidTask(f"task {name}: {exc}") from None
        # Where a worker finds it: the task, not run_task.
        definition.import_path, definition.defined_in = name, task.func.__module__
        if name in _loaded_with_apps:
            definition.registered_while_apps_load = True
        definition.runs_logged_elsewhere = True
        registry.register(definition)
        with _definitions_lock:
            _definitions[key] = (self.options, task, definition)
        return definition

    def enqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        """Store the task as a job in the caller's transaction; sends
        ``task_enqueued`` once the job row is written."""
        self.validate_task(task)
        found = task_at(task.module_path)
        if found is None or found.func is not task.func:
            # Checked here, not in validate_task: @task runs while its module
            # is still importing, before the name is bound.
            raise InvalidTask(
                f"task {task.module_path}: that import path does not lead to this task, so "
                "no worker could run it nor get_result read it back; apply @task where the "
                "function is defined, under the function's own name"
            )
        definition = self.definition_for(task)
        result = TaskResult(
            task=task,
            id="0",
            status=TaskResultStatus.READY,
            enqueued_at=None,
            started_at=None,
            finished_at=None,
            last_attempted_at=None,
            args=args,
            kwargs=kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        run_after = task.run_after
        if run_after is not None and timezone.is_naive(run_after):
            run_after = timezone.make_aware(run_after)
        # What using() changed from the decorated task is this enqueue's own;
        # the rest is the job type's (its decorator, or WORKHORSE['JOB_OPTIONS']).
        changes: dict[str, Any] = {"run_at": run_after}
        if task.queue_name != found.queue_name:
            changes["queue"] = task.queue_name
        if task.priority != found.priority:
            # Django takes any whole number (5.0, True); workhorse wants an int.
            changes["priority"] = int(task.priority)
        if isinstance(task, WorkhorseTask):
            for field in TASK_ENQUEUE_OPTIONS:
                value = getattr(task, field)
                if value is not None and value != getattr(found, field, None):
                    changes[field] = value
        try:
            handle = definition.options(**changes).enqueue(
                args=result.args, kwargs=result.kwargs, backend=self.alias
            )
        except WorkhorseError as exc:
            raise InvalidTask(f"task {definition.name}: {exc}") from None
        if not handle.inserted:
            return self.get_result(str(handle.id))
        object.__setattr__(result, "id", str(handle.id))
        # Python's clock: the job's created_at (the database's, which a
        # re-read gives) is not among what the enqueue function returns.
        object.__setattr__(result, "enqueued_at", timezone.now())
        task_enqueued.send(type(self), task_result=result)
        return result

    def get_result(self, result_id: str) -> TaskResult:
        """The task's result as stored now; TaskResultDoesNotExist for an id
        that is malformed, unknown, or a job that is not a task of this backend."""
        job_id = parse_result_id(result_id)
        admin = Admin(using=self.database)
        snapshot = admin.get_job(job_id) if job_id is not None else None
        payload = snapshot.payload if snapshot is not None else None
        if (
            job_id is None
            or snapshot is None
            or not isinstance(payload, dict)
            or payload.get("backend") != self.alias
        ):
            raise TaskResultDoesNotExist(
                f"no task result with id {result_id!r} in backend {self.alias!r}"
            )
        task = task_at(snapshot.name)
        if task is None:
            raise TaskResultDoesNotExist(
                f"task result {result_id!r} belongs to {snapshot.name!r}, which no longer "
                "imports as a task"
            )
        with connections[self.database].cursor() as cursor:
            attempts = store.get_attempts(cursor, job_id)
        # The task's backend is this one, whichever its decorator named (it
        # may have been enqueued through using(backend=...)): refresh() and
        # the worker read the result again through result.task.get_backend().
        changes: dict[str, Any] = {
            "queue_name": snapshot.queue,
            "priority": snapshot.priority,
            "backend": self.alias,
        }
        waiting = (JobState.BLOCKED, JobState.SCHEDULED, JobState.READY)
        if (
            not attempts
            and snapshot.state in waiting
            and snapshot.run_at is not None
            and snapshot.run_at != snapshot.created_at  # the enqueue gave no time: both are now()
            and self._enqueued_with_a_time(job_id)  # a release moves run_at on, too
        ):
            changes["run_after"] = snapshot.run_at
        return build_result(task.using(**changes), self.alias, snapshot, attempts)

    def _enqueued_with_a_time(self, job_id: int) -> bool:
        """Whether the job was enqueued with a ``run_at`` or a delay (its
        ``first_due_at``), rather than to run at once."""
        from ..models import Job  # the backend is built before the apps are ready

        rows = Job.objects.using(self.database).filter(id=job_id, first_due_at__isnull=False)
        return bool(rows.exists())


def prerequisites(items: Iterable[Any]) -> tuple[Any, ...]:
    """``depends_on`` of ``using()``: each ``TaskResult`` or result id becomes its
    job id; job handles and ids pass on as they are (the job options check
    them). InvalidTask names an item that is none of these."""
    if isinstance(items, str | bytes) or not isinstance(items, Iterable):
        raise InvalidTask(
            f"depends_on must be a list of task results, result ids, job handles or job ids; "
            f"got {type(items).__name__}"
        )
    out: list[Any] = []
    for item in items:
        if isinstance(item, TaskResult):
            item = item.id
        if isinstance(item, str):
            job_id = parse_result_id(item)
            if job_id is None:
                raise InvalidTask(
                    f"depends_on: {shown(item)} is not a task result id (a whole number as a "
                    "string, as TaskResult.id holds)"
                )
            item = job_id
        out.append(item)
    return tuple(out)


def parse_result_id(result_id: Any) -> int | None:
    """The job id a result id names, or None when it cannot name one."""
    text = str(result_id) if isinstance(result_id, int) else result_id
    if not isinstance(text, str) or not ID_RE.fullmatch(text):
        return None
    value = int(text)
    return value if value <= MAX_JOB_ID else None


def task_at(path: str) -> Task | None:
    """The ``Task`` object at an import path, or None."""
    if "." not in path or job_name_problem(path) or path.startswith("."):
        # Not a name a task's path can have: ``...`` or ``.x.y`` would be
        # read as a relative import, which raises TypeError.
        return None
    if not may_import(path.rsplit(".", 1)[0]):
        # A stored name never makes this process import a module outside
        # the installed apps (docs/django-tasks.md).
        return None
    try:
        found = import_string(path)
    except (ImportError, AttributeError, ValueError):
        return None
    return found if isinstance(found, Task) else None


def resolve_task_job(name: str) -> JobDefinition[..., Any] | None:
    """Registry resolver: a job named by a task's path whose module nobody
    imported yet (a worker started before it was) registers on first claim."""
    task = task_at(name)
    if task is None:
        return None
    backend = task.get_backend()
    if not isinstance(backend, WorkhorseBackend):
        return None
    return backend.definition_for(task)


def workhorse_backends() -> list[WorkhorseBackend]:
    """Every configured ``TASKS`` backend that is a workhorse one."""
    return [b for b in task_backends.all() if isinstance(b, WorkhorseBackend)]
