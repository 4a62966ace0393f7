"""Where a worker finds the job behind a stored name, and what it may import.

A worker knows the jobs its app loading registered: every installed app's
``jobs.py`` (and ``tasks.py`` with the Tasks backend), its models and
whatever those import. A job defined elsewhere in an installed app, say
``myapp/emails.py``, is still found: its default name is its import path
(``myapp.emails.send``), so the worker imports ``myapp.emails`` the first
time it claims one, as the Tasks backend does for a task.

A name comes from the database, which any SQL caller may write, so it never
chooses an arbitrary module: only modules inside an installed app (or
modules already imported, which run nothing new) are imported this way.
Anything else is an ``UnknownJobError`` (``TaskResultDoesNotExist`` for a
task's result) without an import.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .limits import job_name_problem

if TYPE_CHECKING:
    from .definitions import JobDefinition

logger = logging.getLogger("django_workhorse.discovery")

STARTED = time.time()
"""When this process loaded workhorse (a worker: when it started)."""

_failed: dict[str, str] = {}
"""Modules whose import raised, with the error: each is reported once."""


_app_packages: tuple[str, ...] | None = None
"""The installed apps' packages, as app loading found them (``remember_apps``)."""


def remember_apps() -> None:
    """Note the installed apps' packages, once app loading made their configs.

    Read then rather than at each lookup: a test case's ``available_apps``
    hides apps from the registry for a while, not from the project.
    """
    global _app_packages
    from django.apps import apps

    _app_packages = tuple(config.name for config in apps.get_app_configs())


def installed_app_of(module: str) -> str | None:
    """The installed app (its package name) that contains ``module``, or None."""
    if _app_packages is None:
        remember_apps()
    best = None
    for package in _app_packages or ():
        if (module == package or module.startswith(package + ".")) and (
            best is None or len(package) > len(best)
        ):
            best = package
    return best


def is_test_module(module: str) -> bool:
    """A test suite's module (``tests``, ``test_*``, ``conftest``), in an app or not."""
    return any(
        part in ("tests", "test", "conftest") or part.startswith("test_")
        for part in module.split(".")
    )


def may_import(module: str) -> bool:
    """Whether a stored name may lead this process to import ``module``:
    it is already imported (nothing runs), or it lies inside an installed
    app and is not one of its test modules."""
    if module in sys.modules:
        return True
    return installed_app_of(module) is not None and not is_test_module(module)


def import_for(name: str) -> bool:
    """Import the module that a dotted ``name`` starts with, when it may be
    imported: the longest prefix that is a module. True when one is loaded
    (now or before), False when none may be or none exists."""
    if job_name_problem(name) or "." not in name or name.startswith("."):
        return False
    parts = name.split(".")
    for end in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:end])
        if module in sys.modules:
            return True
        if not may_import(module):
            continue
        try:
            spec = importlib.util.find_spec(module)  # imports its parent packages
        except Exception:
            continue  # a parent that is not a package, or is missing
        if spec is None:
            continue
        try:
            importlib.import_module(module)
        except Exception as exc:  # an app's module that does not import is the news
            if module not in _failed:
                _failed[module] = f"{type(exc).__name__}: {exc}"
                logger.warning(
                    "workhorse: module %s, which job %r names, could not be imported: %s",
                    module,
                    name,
                    _failed[module],
                )
            return False
        return True
    return False


def import_problem(name: str) -> str | None:
    """Why importing for ``name`` failed in this process, if it was tried."""
    parts = name.split(".")
    for end in range(len(parts) - 1, 0, -1):
        failed = _failed.get(".".join(parts[:end]))
        if failed:
            return failed
    return None


def defined_job(name: str) -> JobDefinition[..., Any] | None:
    """Registry resolver: the job ``name`` names, once the module its name
    leads to (inside an installed app) is imported; None otherwise."""
    from .registry import all_jobs

    if not import_for(name):
        return None
    return dict.get(all_jobs(), name)  # dict's get: the table's would ask the resolvers again


# -- where a definition can be found from --------------------------------------


def found_by_name(definition: JobDefinition[..., Any]) -> bool:
    """Whether a worker finds ``definition`` from its name alone: the name is
    the handler's import path, in a module of an installed app."""
    path = definition.import_path
    return (
        definition.name == path
        and "<" not in path
        and installed_app_of(defining_module(definition)) is not None
    )


def defining_module(definition: JobDefinition[..., Any]) -> str:
    """The module the job's handler (or task) is defined in."""
    return definition.defined_in


def unfindable(definition: JobDefinition[..., Any]) -> tuple[str, str] | None:
    """``(message, fix)`` when a worker process would not find ``definition``;
    None when it would (registered while apps loaded, or found by its name)."""
    if getattr(definition, "registered_while_apps_load", True) or found_by_name(definition):
        return None
    module = defining_module(definition)
    app = installed_app_of(module)
    name = definition.name
    if app is not None:
        return (
            f"job {name!r} is defined in {module}, which app loading does not import, under "
            "a name that is not its import path, so no worker would find it",
            f"define it in {app.replace('.', '/')}/jobs.py (or import it there), or drop "
            f"name={name!r} so that workers find it by its path {definition.import_path}",
        )
    missing = app_package_of(module) or module.split(".")[0]
    return (
        f"job {name!r} is defined in {module}, which is in no app of INSTALLED_APPS, so no "
        "worker would import it",
        f"add {missing!r} to INSTALLED_APPS, or move the job into the jobs.py of an installed app",
    )


def app_package_of(module: str) -> str | None:
    """The innermost package holding ``module`` (or ``module`` itself) that
    is a Django app, one with an ``apps.py``: ``project.billing`` for
    ``project.billing.jobs``, where ``project`` alone is no app."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        package = ".".join(parts[:end])
        spec = getattr(sys.modules.get(package), "__spec__", None)
        locations = getattr(spec, "submodule_search_locations", None) or []
        if any((Path(location) / "apps.py").is_file() for location in locations):
            return package
    return None


def belongs_to_project(module: str) -> bool:
    """Whether ``module`` is the project's own code that a worker is meant
    to run: inside an installed app, in a package that is a Django app
    (it, or a package holding it, has an ``apps.py``: apps may nest) or in
    the package of the settings module.

    Test modules (``tests``, ``test_*``, ``conftest``, in an app or not),
    scripts and ``__main__`` may define jobs that the same process runs
    (``run_jobs``, a worker started by the test): they are left alone."""
    from django.conf import settings

    if is_test_module(module):
        return False  # even one inside an app (myapp/tests.py)
    if installed_app_of(module) is not None:
        return True
    top = module.split(".")[0]
    if top == (getattr(settings, "SETTINGS_MODULE", None) or "").split(".")[0]:
        return True
    return app_package_of(module) is not None


def enqueue_refusal(definition: JobDefinition[..., Any]) -> str | None:
    """The message that refuses an enqueue of a job no worker would find,
    or None. Only the project's own modules are refused (``belongs_to_project``)."""
    found = unfindable(definition)
    if found is None or not belongs_to_project(defining_module(definition)):
        return None
    message, fix = found
    return f"{message}: {fix}; nothing was enqueued"


def unknown_job_message(name: str, runner: str, then: str) -> str:
    """What a run records for a job no handler of ``runner`` answers to;
    ``then`` says what becomes of the attempt."""
    failed = import_problem(name)
    changed = changed_module(name)
    if failed:
        why = f"its module could not be imported ({failed})"
    elif changed:
        return (
            f"no job named {name!r} is registered in {runner}; its module {changed} changed "
            f"after {runner} started, and workers do not reload code: restart the workers "
            f"started before the code changed ({then})"
        )
    else:
        why = (
            "the worker never imported the module that defines it (a job is found in an "
            "installed app's jobs.py, a module app loading imports, or by its import path "
            "inside an installed app)"
        )
    return (
        f"no job named {name!r} is registered in {runner}; {why}; deploy the code that "
        f"defines it, and restart the workers started before it was deployed ({then})"
    )


def changed_module(name: str) -> str | None:
    """The module ``name`` leads to, when this process imported it and its
    file was written after the process started: the code changed under a
    running worker."""
    parts = name.split(".")
    for end in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:end]))
        path = getattr(module, "__file__", None)
        if module is None or not path:
            continue
        try:
            written = os.stat(path).st_mtime
        except OSError:
            return None
        return module.__name__ if written > STARTED else None
    return None
