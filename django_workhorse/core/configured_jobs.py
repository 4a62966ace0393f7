"""``WORKHORSE["JOB_OPTIONS"]``: the decorator's options for jobs and tasks
the project did not write (a third party's ``@task``, a package's job).

Each key names a job (its name, or its handler's or task's import path);
each value is a dict of the options its decorator would take:
``{"modelsearch.tasks.insert_or_update_object_task": {"max_attempts": 1,
"no_retry_on": ["django.core.exceptions.ObjectDoesNotExist"]}}``. They
replace the decorator's own values (per-enqueue choices, ``.options()`` and a
task's ``using()``, still win). Exceptions are classes or their dotted paths,
imported when first needed: a settings module should not import the
project's code.

The table is read again only when ``settings.WORKHORSE`` is another object
(``override_settings``), so each lookup is one identity test and a dict get.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings as django_settings

from .limits import (
    MAX_ATTEMPTS_MAX,
    MAX_ATTEMPTS_MIN,
    MAX_STALLED_MAX,
    MAX_STALLED_MIN,
    PRIORITY_MAX,
    PRIORITY_MIN,
    duration_problem,
    queue_name_problem,
    shown,
    whole_problem,
)

if TYPE_CHECKING:
    from .definitions import JobDefinition

SETTING = "JOB_OPTIONS"
OPTIONS = ("queue", "priority", "max_attempts", "timeout", "max_stalled", "retry_on", "no_retry_on")
"""The decorator options the setting may give, in the order they are shown."""
EXCEPTION_OPTIONS = ("retry_on", "no_retry_on")


def where(key: object) -> str:
    """How an entry reads in a message."""
    return f"WORKHORSE[{SETTING!r}][{shown(key)}]"


def exception_names(value: Any) -> list[Any] | None:
    """The items of an exceptions option (one, or a list or tuple of them), or
    None when the value is not shaped like one."""
    if isinstance(value, str | type):
        return [value]
    if isinstance(value, list | tuple):
        return list(value)
    return None


def problems(value: Any) -> list[tuple[str, str]]:
    """What is wrong with the setting's shape and values, as ``(key, message)``
    for ``conf.problems`` (workhorse.E001); importing exception paths is
    ``import_problems``'s, run by the check."""
    if not isinstance(value, Mapping):
        return [
            (
                SETTING,
                "must be a dict of job names or import paths to option dicts, such as "
                "{'app.tasks.index': {'max_attempts': 1}}, got "
                f"{type(value).__name__} {shown(value)}",
            )
        ]
    found: list[tuple[str, str]] = []
    for key, options in value.items():
        entry = f"{SETTING}[{shown(key)}]"
        if not isinstance(key, str) or not key:
            found.append((entry, "a key must be a job's name or import path (a string)"))
            continue
        if not isinstance(options, Mapping):
            found.append(
                (
                    entry,
                    f"must be a dict of options such as {{'max_attempts': 1}}, got "
                    f"{type(options).__name__} {shown(options)}",
                )
            )
            continue
        for option in options:
            if option not in OPTIONS:
                found.append(
                    (
                        entry,
                        f"{shown(option)} is not an option this setting gives; "
                        f"known: {', '.join(OPTIONS)}",
                    )
                )
        found.extend(
            (f"{entry}[{option!r}]", problem) for option, problem in option_problems(options)
        )
    return found


def option_problems(options: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The known options of one entry that have a wrong type or value."""
    found = []
    for option, low, high in (
        ("priority", PRIORITY_MIN, PRIORITY_MAX),
        ("max_attempts", MAX_ATTEMPTS_MIN, MAX_ATTEMPTS_MAX),
        ("max_stalled", MAX_STALLED_MIN, MAX_STALLED_MAX),
    ):
        if option in options and (problem := whole_problem(option, options[option], low, high)):
            found.append((option, problem))
    if "queue" in options and (problem := queue_name_problem(options["queue"])):
        found.append(("queue", f"queue: {problem}"))
    if "timeout" in options and (
        problem := duration_problem("timeout", options["timeout"], positive=True)
    ):
        found.append(("timeout", problem))
    for option in EXCEPTION_OPTIONS:
        if option not in options:
            continue
        items = exception_names(options[option])
        if items is None or not all(
            (isinstance(item, str) and "." in item)
            or (isinstance(item, type) and issubclass(item, BaseException))
            for item in items
        ):
            found.append(
                (
                    option,
                    f"must be an exception class or its dotted path, or a list of them "
                    f"(['django.core.exceptions.ObjectDoesNotExist']), got "
                    f"{shown(options[option])}",
                )
            )
    return found


def import_problems(value: Any) -> list[tuple[str, str]]:
    """Exception paths of well-shaped entries that do not import as exception classes."""
    if not isinstance(value, Mapping):
        return []
    found = []
    for key, options in value.items():
        if not isinstance(options, Mapping):
            continue
        for option in EXCEPTION_OPTIONS:
            for item in exception_names(options.get(option)) or ():
                if isinstance(item, str):
                    try:
                        exception_class(item)
                    except (ImportError, TypeError) as exc:
                        found.append((f"{SETTING}[{shown(key)}][{option!r}]", str(exc)))
    return found


_imported: dict[str, type[BaseException]] = {}


def exception_class(path: str) -> type[BaseException]:
    """The exception class at a dotted path (imported once); ImportError or
    TypeError naming the path."""
    found = _imported.get(path)
    if found is not None:
        return found
    from django.utils.module_loading import import_string

    try:
        target = import_string(path)
    except ImportError as exc:
        raise ImportError(f"cannot import {path!r}: {exc}") from None
    if not (isinstance(target, type) and issubclass(target, BaseException)):
        raise TypeError(f"{path!r} is {shown(target)}, not an exception class")
    _imported[path] = target
    return target


def exceptions_of(value: Any) -> tuple[type[BaseException], ...]:
    """An exceptions option as classes (paths imported)."""
    return tuple(
        exception_class(item) if isinstance(item, str) else item
        for item in exception_names(value) or ()
    )


_read: tuple[object, dict[str, Mapping[str, Any]]] | None = None
"""The ``WORKHORSE`` object last read, and its well-formed entries."""


def table() -> dict[str, Mapping[str, Any]]:
    """The setting's entries by key; entries with a problem are left out
    (``manage.py check`` reports them, and the worker refuses to start)."""
    global _read
    configured = getattr(django_settings, "WORKHORSE", None)
    read = _read
    if read is not None and read[0] is configured:
        return read[1]
    raw = configured.get(SETTING) if isinstance(configured, Mapping) else None
    entries: dict[str, Mapping[str, Any]] = {}
    if isinstance(raw, Mapping):
        bad = {key for key, _message in problems(raw)}
        for key, options in raw.items():
            if isinstance(key, str) and not any(
                b == f"{SETTING}[{shown(key)}]" or b.startswith(f"{SETTING}[{shown(key)}][")
                for b in bad
            ):
                entries[key] = dict(options)
    _read = (configured, entries)
    return entries


def entry_for(definition: JobDefinition[..., Any]) -> tuple[str, Mapping[str, Any]] | None:
    """``(key, options)`` of the entry that names ``definition`` (by its name,
    else by its import path), or None."""
    entries = table()
    if not entries:
        return None
    for key in (definition.name, definition.import_path):
        options = entries.get(key)
        if options is not None:
            return key, options
    return None


def unmatched_keys(value: Any) -> list[str]:
    """Keys of the setting that name no job this process can find: neither a
    registered job's name or import path nor one a resolver finds."""
    from . import registry

    if not isinstance(value, Mapping):
        return []
    jobs = registry.all_jobs()
    known = set(jobs) | {d.import_path for d in jobs.values()}
    return [
        key
        for key in value
        if isinstance(key, str) and key not in known and registry.resolve(key) is None
    ]


def described(options: Mapping[str, Any]) -> str:
    """An entry's options as the admin shows them: ``max_attempts 1, timeout 30s``."""
    parts = []
    for option in OPTIONS:
        if option not in options:
            continue
        value = options[option]
        if option in EXCEPTION_OPTIONS:
            text = ", ".join(
                item if isinstance(item, str) else f"{item.__module__}.{item.__qualname__}"
                for item in exception_names(value) or ()
            )
        elif isinstance(value, timedelta):
            text = f"{value.total_seconds():g}s"
        elif option == "timeout":
            text = f"{value:g}s"
        else:
            text = str(value)
        parts.append(f"{option} {text}")
    return ", ".join(parts)
