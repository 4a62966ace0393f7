"""System checks: ``manage.py check`` reports bad settings and a schema mismatch.

Ids are stable: workhorse.E001 (an invalid WORKHORSE value), workhorse.E002
(the database schema does not match this code and no pending migration
would fix it), workhorse.W001 (the database could not be reached to check the
schema), workhorse.W002 (django_workhorse migrations are pending: a warning,
so that ``migrate`` itself is never blocked), workhorse.W003 (jobs of one
queue ask for different concurrency and ``QUEUES`` does not size it; the
first registered decides), workhorse.E003 (a ``WORKHORSE["SCHEDULES"]``
entry names a job that is not registered, or its payload does not fit the
job or is not JSON),
workhorse.W004 (a schedule with ``catch_up="latest"`` has slots closer together
than ``SCHEDULE_SWEEP_INTERVAL``: each sweep enqueues only the latest of them),
workhorse.E004 (a database alias that holds jobs is not PostgreSQL),
workhorse.E005 (the database's workhorse_* SQL functions are not the ones
the package's migrations install, and no migration is pending: changed by
hand), workhorse.W005 (a job no worker would find: defined under a name of its own
in a module that app loading does not import), workhorse.W006 (a job
defined in a module of no installed app), workhorse.W007 (a job found by
its import path on a queue no worker serves by default), workhorse.W010
(a queue the project's source names that no worker serves by default) and
workhorse.E008 (``WORKHORSE["STORES"]`` is not a list of aliases of
settings.DATABASES, or leaves out ``DATABASE`` or an alias a job is bound to),
workhorse.W008 (a ``WORKHORSE["JOB_OPTIONS"]`` key names no job this
process can find; a bad option in it is workhorse.E001's).
docs/settings.md lists them all.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connections

from ..core import configured_jobs, registry
from ..core.conf import import_callable, problems, raw_settings, setting_path
from ..db import store
from ..db.preflight import not_postgresql
from .unserved import close_matches

if TYPE_CHECKING:
    from ..core.definitions import JobDefinition


@register("workhorse")
def check_settings(app_configs: object = None, **kwargs: object) -> list[Error]:
    found = problems()
    reported = {key for key, _ in found}
    found += [(key, message) for key, message in hook_problems() if key not in reported]
    found += [
        (key, message)
        for key, message in configured_jobs.import_problems(raw_settings().get("JOB_OPTIONS"))
        if key not in reported
    ]
    return [
        Error(
            f"{setting_path(key)} {message}",
            hint="Fix the value in settings.WORKHORSE; docs/settings.md lists every key.",
            obj="settings.WORKHORSE",
            id="workhorse.E001",
        )
        for key, message in found
    ]


def hook_problems() -> list[tuple[str, str]]:
    """ON_JOB_FAILURE and ON_JOB_CANCELED paths that do not lead to a callable,
    as a worker's start would find them (checks run once the apps are ready)."""
    raw = raw_settings()
    found = []
    for key in ("ON_JOB_FAILURE", "ON_JOB_CANCELED"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            continue  # None, or a value problems() reports
        try:
            import_callable(raw[key])
        except ImproperlyConfigured as exc:
            found.append((key, str(exc)))
    return found


@register(Tags.database, "workhorse")
def check_schema(
    app_configs: object = None, databases: Sequence[str] | None = None, **kwargs: object
) -> list[Error | Warning]:
    """Runs with ``check --database`` and before ``migrate``-less commands that ask.

    Checks every store among ``databases``: ``WORKHORSE['DATABASE']`` and the
    alias of each job bound elsewhere with ``@job(using=...)``."""
    if not databases:
        return []
    return [
        message
        for alias in store_aliases()
        if alias in databases and not not_postgresql(alias)
        for message in schema_messages(alias)
    ]


def store_aliases() -> list[str]:
    """The database aliases that hold jobs, among ``settings.DATABASES``:
    ``WORKHORSE['DATABASE']`` and each alias a job is bound to."""
    stores = {raw_settings().get("DATABASE", "default")}
    stores.update(d._using for d in registry.all_jobs().values() if d._using is not None)
    return sorted(alias for alias in stores if isinstance(alias, str) and alias in connections)


@register("workhorse")
def check_postgresql(app_configs: object = None, **kwargs: object) -> list[Error]:
    """A store alias on another database (``startproject`` gives SQLite):
    ``migrate``, ``enqueue`` and ``runworker`` would fail; ``check`` says so
    first. Read from the settings; no connection is opened."""
    return [
        Error(
            problem,
            hint="django-workhorse keeps its jobs in PostgreSQL only; docs/getting-started.md "
            "shows the DATABASES entry.",
            obj=f"settings.DATABASES[{alias!r}]",
            id="workhorse.E004",
        )
        for alias in store_aliases()
        if (problem := not_postgresql(alias))
    ]


def schema_messages(alias: str) -> list[Error | Warning]:
    """The schema check for one alias (also used by the worker at start-up)."""
    try:
        with connections[alias].cursor() as cursor:
            installed = store.schema_version(cursor)
    except DatabaseError as exc:
        return [
            Warning(
                f"could not read the django-workhorse schema version of database {alias!r}: {exc}",
                id="workhorse.W001",
            )
        ]
    problem = store.schema_problem(installed)
    if problem is None:
        return functions_messages(alias)
    if migrations_pending(alias):
        if inside_migrate():
            return []  # the command about to apply them need not be told to run
        return [Warning(f"database {alias!r}: {problem}", id="workhorse.W002")]
    return [Error(f"database {alias!r}: {problem}", id="workhorse.E002")]


def functions_messages(alias: str) -> list[Error | Warning]:
    """workhorse.E005 when the installed SQL functions are not the package's;
    workhorse.W002 when some migrations are pending (a newer package's
    functions not installed yet) though the schema version is one it speaks."""
    from ..db import installed_sql

    try:
        with connections[alias].cursor() as cursor:
            problem = installed_sql.problem(cursor, alias)
            pending = installed_sql.pending_message(cursor, alias)
    except DatabaseError as exc:
        return [
            Warning(
                f"could not read the django-workhorse functions of database {alias!r}: {exc}",
                id="workhorse.W001",
            )
        ]
    if pending is not None and not inside_migrate():
        return [Warning(pending, id="workhorse.W002")]
    if problem is None:
        return []
    return [
        Error(
            problem,
            hint="docs/settings.md#installed-sql-functions says what is compared.",
            id="workhorse.E005",
        )
    ]


def inside_migrate() -> bool:
    """Whether these checks run for Django's ``migrate`` command.

    ``migrate`` runs the database checks before it applies anything, and
    Django tells a check nothing about who asked; the command is found on
    the call stack (a few dozen frames, walked once per ``check``).
    """
    from django.core.management.commands.migrate import Command as Migrate

    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if isinstance(frame.f_locals.get("self"), Migrate):
            return True
        frame = frame.f_back
    return False


def migrations_pending(alias: str) -> bool:
    """Whether django_workhorse has migrations not yet applied to ``alias``."""
    from django.db.migrations.loader import MigrationLoader

    loader = MigrationLoader(connections[alias], ignore_no_migrations=True)
    leaves = loader.graph.leaf_nodes("django_workhorse")
    return any(leaf not in loader.applied_migrations for leaf in leaves)


@register("workhorse")
def check_stores(app_configs: object = None, **kwargs: object) -> list[Error]:
    """``WORKHORSE['STORES']``: the admin and ``workhorse_status`` show the
    stores it lists, so a store it leaves out would hide that store's jobs."""
    from ..core.stores import stores_problems, unlisted_bindings

    listed = raw_settings().get("STORES")
    hint = (
        "List every database alias that holds jobs in WORKHORSE['STORES'], or remove the "
        "key to have WORKHORSE['DATABASE'] and every alias a job is bound to; "
        "see docs/admin.md#several-stores."
    )
    messages = [
        Error(
            f"WORKHORSE['STORES'] {problem}",
            hint=hint,
            obj="settings.WORKHORSE",
            id="workhorse.E008",
        )
        for problem in stores_problems(listed)
    ]
    messages += [
        Error(
            f"job {name!r} is bound to database {alias!r}, which WORKHORSE['STORES'] leaves "
            "out: the admin and workhorse_status would not show its jobs",
            hint=f"Add {alias!r} to WORKHORSE['STORES'].",
            obj=name,
            id="workhorse.E008",
        )
        for name, alias in unlisted_bindings(listed)
    ]
    return messages


@register("workhorse")
def check_queue_concurrency(app_configs: object = None, **kwargs: object) -> list[Warning]:
    """Jobs of one queue that ask for different ``concurrency``: the first
    registered decides (the seed's rule), so the others' wish is ignored.
    A queue whose ``WORKHORSE['QUEUES']`` entry sets ``concurrency`` is
    settled there, whatever its jobs ask for."""
    queues = raw_settings().get("QUEUES")
    settled = (
        {
            name
            for name, options in queues.items()
            if isinstance(options, Mapping) and options.get("concurrency") is not None
        }
        if isinstance(queues, Mapping)
        else set()
    )
    first: dict[tuple[str, str], JobDefinition[..., Any]] = {}
    messages: list[Warning] = []
    for definition in registry.all_jobs().values():
        if definition.concurrency is None or definition.queue in settled:
            continue
        key = (definition.using, definition.queue)
        decider = first.setdefault(key, definition)
        if decider is definition or decider.concurrency == definition.concurrency:
            continue
        queue = definition.queue
        messages.append(
            Warning(
                f"jobs of queue {queue!r} ask for different concurrency: "
                f"{decider.name!r} asks for {decider.concurrency} and {definition.name!r} for "
                f"{definition.concurrency}; {decider.name!r} was registered first, so workers "
                f"give the queue {decider.concurrency} slot(s)",
                hint=(
                    f"Give every job of queue {queue!r} the same concurrency, or set it once in "
                    f"WORKHORSE['QUEUES'][{queue!r}]['concurrency'] (which wins over both)."
                ),
                obj=definition.name,
                id="workhorse.W003",
            )
        )
    return messages


@register("workhorse")
def check_schedules(app_configs: object = None, **kwargs: object) -> list[Error]:
    """Each settings schedule's job and payload, resolved as a worker's start
    would (checks run once the app registry is ready, after every app's
    ``jobs.py`` was imported). Entries with a bad shape are workhorse.E001's."""
    from ..core.cron import schedule_key, settings_problems
    from ..core.schedules import job_schedules, refuse_clash, settings_schedule

    raw = raw_settings().get("SCHEDULES")
    if not isinstance(raw, Mapping) or not raw:
        return []
    misshapen = {key for key, _message in settings_problems(raw)}
    messages: list[Error] = []
    for name, entry in raw.items():
        if schedule_key(name) in misshapen:
            continue
        try:
            definition, _schedule = settings_schedule(name, entry)
            refuse_clash(name, job_schedules(definition.using))
        except ImproperlyConfigured as exc:
            messages.append(
                Error(
                    str(exc),
                    hint=(
                        f"Fix WORKHORSE['SCHEDULES'][{name!r}]: 'job' must name a registered "
                        "job, and 'payload' must hold JSON values (str, int, float, bool, "
                        "None, lists, dicts) that fit the job's arguments; runworker refuses "
                        "to start until it does. See docs/schedules.md."
                    ),
                    obj="settings.WORKHORSE",
                    id="workhorse.E003",
                )
            )
    return messages


@register("workhorse")
def check_schedule_periods(app_configs: object = None, **kwargs: object) -> list[Warning]:
    """A ``latest`` schedule whose slots come faster than the sweep: each
    sweep finds several slots due and enqueues only the latest one."""
    from ..core.conf import duration_seconds
    from ..core.cron import cron_problem, schedule_key, settings_problems, shortest_period
    from ..core.schedules import default_timezone

    raw = raw_settings()
    try:
        interval = duration_seconds(raw.get("SCHEDULE_SWEEP_INTERVAL"))
    except (TypeError, ValueError):
        return []  # workhorse.E001 reports it
    # (name, cron, timezone, where the catch-up mode is set)
    latest: list[tuple[str, str, str, bool]] = []
    for definition in registry.all_jobs().values():
        cron = getattr(definition, "schedule", None)
        if cron:
            latest.append((definition.name, cron, default_timezone(), False))
    entries = raw.get("SCHEDULES")
    if isinstance(entries, Mapping):
        misshapen = {key for key, _message in settings_problems(entries)}
        for name, entry in entries.items():
            if schedule_key(name) in misshapen:
                continue
            if entry.get("catch_up", "latest") == "latest":
                latest.append((name, entry["cron"], entry.get("timezone", "UTC"), True))
    messages: list[Warning] = []
    for name, cron, zone, in_settings in latest:
        if cron_problem(cron, zone):
            continue
        period = shortest_period(cron, zone)
        if period >= interval:
            continue
        where = f"WORKHORSE['SCHEDULES'][{name!r}]" if in_settings else f"job {name!r}"
        catch_up = (
            f"set 'catch_up': 'all' in WORKHORSE['SCHEDULES'][{name!r}]"
            if in_settings
            else "declare it in WORKHORSE['SCHEDULES'] with 'catch_up': 'all'"
        )
        messages.append(
            Warning(
                f"schedule {name!r} ({where}, cron {cron!r}) has slots {period:g} s apart, "
                f"less than SCHEDULE_SWEEP_INTERVAL ({interval:g} s): with catch_up='latest' "
                "each sweep enqueues only the latest due slot and the slots before it in that "
                "sweep get no job",
                hint=(
                    f"Lower WORKHORSE['SCHEDULE_SWEEP_INTERVAL'] to at most {period:g}, or "
                    f"{catch_up} (one job per slot); see docs/schedules.md."
                ),
                obj=name,
                id="workhorse.W004",
            )
        )
    return messages


@register("workhorse")
def check_job_locations(app_configs: object = None, **kwargs: object) -> list[Warning]:
    """Jobs of the project's code that a worker process would not find:
    the same test that refuses their enqueue (``discovery.enqueue_refusal``).
    Only jobs this process has imported can be seen here; enqueue refuses
    the others when they are used."""
    from ..core.discovery import belongs_to_project, defining_module, installed_app_of, unfindable

    messages: list[Warning] = []
    for definition in registry.all_jobs().values():
        module = defining_module(definition)
        found = unfindable(definition)
        if found is None or not belongs_to_project(module):
            continue
        message, fix = found
        messages.append(
            Warning(
                message,
                hint=f'{fix[0].upper()}{fix[1:]}; docs/worker.md, "Where jobs are found".',
                obj=definition.name,
                id="workhorse.W005" if installed_app_of(module) else "workhorse.W006",
            )
        )
    return messages + unserved_queue_warnings()


def unserved_queue_warnings() -> list[Warning]:
    """Queues a worker started without ``--queues`` would not serve: nothing
    it knows at start uses them and no setting names them.

    workhorse.W010: a queue named in the project's source (``queue="..."``
    of a ``@job`` or an ``.options(...)``, read from the files, so whatever
    this process imported), with the served queues it looks like.
    workhorse.W007: a job found by its import path (its module is not
    imported by app loading) on such a queue, for the names the source does
    not spell out (those are W010's)."""
    from ..core.discovery import belongs_to_project, defining_module, found_by_name
    from .code_queues import project_mentions
    from .servable import task_queues

    if problems():
        return []  # the job defaults cannot be read: workhorse.E001 says why
    raw = raw_settings()
    configured = raw.get("QUEUES")
    named = set(configured) if isinstance(configured, Mapping) else set()
    default_alias = raw.get("DATABASE", "default")
    jobs = list(registry.all_jobs().values())
    messages: list[Warning] = []
    served_anywhere = {d.queue for d in jobs if d.registered_while_apps_load} | named
    served_anywhere.add(raw.get("DEFAULT_QUEUE", "default"))
    for alias in connections.databases:
        served_anywhere |= task_queues(alias)
    literal: dict[str, list[str]] = {}
    root = Path(getattr(settings, "BASE_DIR", None) or Path.cwd())
    for mention in project_mentions():
        if mention.using is not None and mention.using not in connections.databases:
            continue  # bound to a database this project does not have (yet)
        if mention.queue not in served_anywhere:
            literal.setdefault(mention.queue, []).append(mention.place(root))
    for queue, places in sorted(literal.items()):
        close = close_matches(queue, served_anywhere)
        typo = f"Did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        shown = ", ".join(places[:3]) + (f" and {len(places) - 3} more" if len(places) > 3 else "")
        messages.append(
            Warning(
                f"queue {queue!r} (named at {shown}) is in no setting and no job a worker knows "
                "at start uses it: a worker started without --queues does not serve it, so its "
                "jobs would wait",
                hint=f"{typo}Otherwise name it in WORKHORSE['QUEUES'] ({{{queue!r}: {{}}}}), "
                f"which every worker serves, or start a worker with --queues {queue}; "
                'docs/worker.md, "Where jobs are found".',
                obj=queue,
                id="workhorse.W010",
            )
        )
    for definition in jobs:
        if definition.registered_while_apps_load or not found_by_name(definition):
            continue
        if not belongs_to_project(defining_module(definition)):
            continue
        alias, queue = definition.using, definition.queue
        if queue in literal:
            continue  # W010 names it, where the source names it
        served = {d.queue for d in jobs if d.registered_while_apps_load and d.using == alias}
        served |= named | task_queues(alias)
        if alias == default_alias:
            served.add(raw.get("DEFAULT_QUEUE", "default"))
        if queue in served:
            continue
        messages.append(
            Warning(
                f"job {definition.name!r} is found by its import path (app loading does not "
                f"import {defining_module(definition)}), but its queue {queue!r} is used by no "
                "job a worker knows at start: a worker started without --queues does not "
                "serve it",
                hint=f"Name it in WORKHORSE['QUEUES'] ({{{queue!r}: {{}}}}), which every worker "
                f"serves, start a worker with --queues {queue}, or define the job in its app's "
                'jobs.py; docs/worker.md, "Where jobs are found".',
                obj=definition.name,
                id="workhorse.W007",
            )
        )
    return messages


@register("workhorse")
def check_job_options(app_configs: object = None, **kwargs: object) -> list[Warning]:
    """``WORKHORSE["JOB_OPTIONS"]`` keys that name no job: a misspelt path
    would leave the job with its decorator's options, silently. Like W005 to
    W007, only jobs the checking process can find count (a registered job,
    or one its name leads to inside an installed app)."""
    raw = raw_settings().get("JOB_OPTIONS")
    return [
        Warning(
            f"{configured_jobs.where(key)} names no job: no registered job has that name or "
            "import path, and none is found by it",
            hint=(
                "Write the job's name or the import path of its function or task, e.g. "
                "'modelsearch.tasks.insert_or_update_object_task'; the jobs' names are in "
                "the admin's job list."
            ),
            obj="settings.WORKHORSE",
            id="workhorse.W008",
        )
        for key in configured_jobs.unmatched_keys(raw)
    ]
