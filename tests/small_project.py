"""A small Django project written to a temporary folder, for tests that run
``manage.py`` as a new user would: its own settings, one app (``myapp``),
a package that is not an app (``outsider``), an app left out of
``INSTALLED_APPS`` inside a package that is none (``nested.billing``), and either SQLite or a fresh
PostgreSQL database that no migration has touched yet.

``SmallProject(path, database=...)`` writes the files; ``.manage(*args)``
runs ``manage.py`` with this checkout's package first on the path and
returns the finished process; ``.marker(name)`` is a file the project's
modules touch when they run (a job) or are imported (``outsider.spy``).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg

CHECKOUT = Path(__file__).resolve().parents[1]

SETTINGS = """
import os
from pathlib import Path

import django

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = "small-project-not-secret"
DEBUG = True
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django_workhorse",
    "myapp",
]
if django.VERSION < (6, 0):
    INSTALLED_APPS.append("django_tasks")
if os.environ["SMALL_PROJECT_DB"] == "sqlite":
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3",
                             "NAME": BASE_DIR / "db.sqlite3"}}
else:
    DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql",
                             "NAME": os.environ["SMALL_PROJECT_DB"],
                             "HOST": os.environ["SMALL_PROJECT_HOST"],
                             "PORT": os.environ["SMALL_PROJECT_PORT"],
                             "USER": os.environ["SMALL_PROJECT_USER"]}}
USE_TZ = True
TASKS = {"default": {"BACKEND": "django_workhorse.tasks.WorkhorseBackend",
                     "QUEUES": ["default", "queue-1"]}}
MARKERS = Path(os.environ["SMALL_PROJECT_MARKERS"])
"""

MANAGE = """
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "site_settings.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
"""

JOBS = """
import django_workhorse as workhorse


@workhorse.job
def hello(name: str = "world") -> str:
    return f"hello {name}"
"""

ELSEWHERE = """
from django.conf import settings

import django_workhorse as workhorse


@workhorse.job
def report(label: str) -> str:
    (settings.MARKERS / f"report-{label}").touch()
    return label
"""

TASKS = """
try:
    from django.tasks import task
except ImportError:  # Django 5.2 and the django-tasks backport
    from django_tasks import task


@task
def shout(word: str) -> str:
    return word.upper()


@task
def broken() -> None:
    raise RuntimeError("broken task")
"""

RENAMED = """
import django_workhorse as workhorse


@workhorse.job(name="monthly-report")
def monthly() -> None:
    return None
"""

BILLING_APP = """
from django.apps import AppConfig


class BillingConfig(AppConfig):
    name = "nested.billing"
"""

BILLING_JOBS = """
import django_workhorse as workhorse


@workhorse.job
def invoice() -> str:
    return "invoiced"
"""

BRITTLE = """
import missing_dependency_of_myapp  # noqa: F401  (not installed)

import django_workhorse as workhorse


@workhorse.job
def fragile() -> None:
    return None
"""

SPY = """
from django.conf import settings

# Import-time code: what a stored name must never make a process run.
(settings.MARKERS / f"spy-imported-{__import__('os').getpid()}").touch()


def run(**kwargs):
    return None
"""


class SmallProject:
    """The project's files under ``root``; ``database`` is ``"sqlite"`` or
    the name of a PostgreSQL database on the test server."""

    def __init__(self, root: Path, database: str, server: dict[str, str]) -> None:
        self.root = root
        self.database = database
        self.server = server
        self.markers = root / "markers"
        self.markers.mkdir(parents=True)
        files = {
            "manage.py": MANAGE,
            "site_settings/__init__.py": "",
            "site_settings/settings.py": SETTINGS,
            "myapp/__init__.py": "",
            "myapp/jobs.py": JOBS,
            "myapp/tasks_elsewhere.py": ELSEWHERE,
            "myapp/tasks.py": TASKS,
            "myapp/renamed.py": RENAMED,
            "myapp/brittle.py": BRITTLE,
            "outsider/__init__.py": "",
            "outsider/spy.py": SPY,
            "nested/__init__.py": "",
            "nested/billing/__init__.py": "",
            "nested/billing/apps.py": BILLING_APP,
            "nested/billing/jobs.py": BILLING_JOBS,
        }
        for name, text in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip())

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(CHECKOUT), str(self.root)]),
            "DJANGO_SETTINGS_MODULE": "site_settings.settings",
            "SMALL_PROJECT_DB": self.database,
            "SMALL_PROJECT_MARKERS": str(self.markers),
            "PYTHONUNBUFFERED": "1",
            **{f"SMALL_PROJECT_{key.upper()}": value for key, value in self.server.items()},
        }

    def manage(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run ``manage.py *args`` to its end; stdout and stderr as text."""
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=self.root,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def shell(self, code: str) -> subprocess.CompletedProcess[str]:
        """``manage.py shell -c code``."""
        return self.manage("shell", "-v", "0", "-c", textwrap.dedent(code))

    def marker(self, name: str) -> Path:
        return self.markers / name


def server_of_tests() -> dict[str, str]:
    """Host, port and user of the PostgreSQL server the test database is on."""
    from django.db import connection

    s = connection.settings_dict
    return {
        "host": s.get("HOST") or "127.0.0.1",
        "port": str(s.get("PORT") or 5432),
        "user": s.get("USER") or "postgres",
    }


@contextlib.contextmanager
def fresh_database(server: dict[str, str]) -> Iterator[str]:
    """A new, empty PostgreSQL database on ``server``, dropped afterwards."""
    name = f"wh_small_{uuid.uuid4().hex[:10]}"
    admin = f"host={server['host']} port={server['port']} user={server['user']} dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
