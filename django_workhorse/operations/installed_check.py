"""The one system check that holds without the app: ``django_workhorse``
missing from ``INSTALLED_APPS``.

``checks.py`` is registered by the app's ``ready()``, which never runs when
the app is not installed, and Django registers a task backend's checks only
once ``django.tasks`` has been imported. This module is imported with the
package itself (``import django_workhorse``, a ``jobs.py``, the Tasks
backend), so ``manage.py check`` and ``migrate`` say what to add whenever
anything of workhorse was imported before the checks ran; an enqueue says
it too (db/preflight.py).
"""

from __future__ import annotations

from typing import Any

from django.core.checks import Error, register

BACKEND_PATHS = frozenset(
    {"django_workhorse.tasks.WorkhorseBackend", "django_workhorse.tasks.backend.WorkhorseBackend"}
)
FIX = "Add 'django_workhorse' to INSTALLED_APPS, then run `manage.py migrate`."


@register("workhorse")
def check_installed(app_configs: object = None, **kwargs: object) -> list[Error]:
    """workhorse.E103 for each ``TASKS`` backend of workhorse, workhorse.E009
    when none is and the package is used all the same, unless installed."""
    from django.apps import apps
    from django.conf import settings

    if apps.is_installed("django_workhorse"):
        return []
    tasks: Any = getattr(settings, "TASKS", None)
    aliases = [
        alias
        for alias, params in (tasks.items() if isinstance(tasks, dict) else ())
        if isinstance(params, dict) and params.get("BACKEND") in BACKEND_PATHS
    ]
    if aliases:
        return [
            Error(
                f"TASKS[{alias!r}] uses the workhorse backend but django_workhorse is not in "
                "INSTALLED_APPS",
                hint=FIX,
                obj=f"settings.TASKS[{alias!r}]",
                id="workhorse.E103",
            )
            for alias in aliases
        ]
    return [
        Error(
            "django_workhorse is used (imported) but is not in INSTALLED_APPS: its jobs.py "
            "discovery, system checks and migrations do not run",
            hint=FIX,
            obj="settings.INSTALLED_APPS",
            id="workhorse.E009",
        )
    ]
