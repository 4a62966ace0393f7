"""The import paths of modules that moved into the package's parts.

Up to 0.1.0 every module sat at the package's root (``django_workhorse.store``,
``django_workhorse.conf``, ``django_workhorse.logformat``, ...). They now live
in the parts docs/ARCHITECTURE.md describes. An import of an old path gives
the module at its new place, the same module object (so a setting such as
``{"()": "django_workhorse.logformat.JsonFormatter"}`` and a migration that
imports ``django_workhorse.sql_files`` keep working), without a warning: the
paths were never promised as public, but code and stored configuration name
them.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

MOVED: dict[str, str] = {
    "admin_actions": "admin.actions",
    "admin_api": "operations.admin_api",
    "backoff": "core.backoff",
    "bulk_actions": "operations.bulk_actions",
    "checks": "operations.checks",
    "code_queues": "operations.code_queues",
    "conf": "core.conf",
    "configured_jobs": "core.configured_jobs",
    "cron": "core.cron",
    "defaults": "core.defaults",
    "definitions": "core.definitions",
    "discovery": "core.discovery",
    "handles": "core.handles",
    "hooks": "core.hooks",
    "installed_check": "operations.installed_check",
    "installed_sql": "db.installed_sql",
    "job_options": "core.job_options",
    "limits": "core.limits",
    "logformat": "operations.logformat",
    "metrics": "operations.metrics",
    "metrics_endpoint": "operations.metrics_endpoint",
    "outcomes": "worker.outcomes",
    "payloads": "core.payloads",
    "preflight": "db.preflight",
    "registry": "core.registry",
    "retention": "operations.retention",
    "schedules": "core.schedules",
    "servable": "operations.servable",
    "sql_files": "db.sql_files",
    "store": "db.store",
    "stores": "core.stores",
    "tasks.options": "tasks.backend_options",
    "tracing": "worker.tracing",
    "unserved": "operations.unserved",
    "worker.limits": "worker.queue_limits",
    "worker.retention": "worker.retention_turn",
}
"""Old path (under ``django_workhorse.``) -> new path (under it too)."""


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target
        self.own_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The module ran at its new place. The import system has just set its
        ``__spec__`` to the old path's; it gets its own back, which its
        relative imports are resolved from."""
        module.__spec__ = self.own_spec


class _OldPaths(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        prefix, _, rest = fullname.partition(".")
        if prefix != "django_workhorse" or rest not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(f"django_workhorse.{MOVED[rest]}"))


if not any(isinstance(finder, _OldPaths) for finder in sys.meta_path):
    sys.meta_path.append(_OldPaths())
