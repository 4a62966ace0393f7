"""The Django project of tests/acceptance/test_upgrade_with_workers_running.py,
written to a temporary folder and run by two releases of django-workhorse:
the released one, installed in a virtualenv of its own, and this checkout's.

``UpgradeProject(root)`` writes the files: settings, the app ``upgradeapp``
whose jobs note each run of themselves in a file (``records()`` reads it),
and ``head_migrations``, the migrations the checkout's side runs: the
checkout's own, each imported from the package, plus one that re-creates
``CHANGED`` with a comment added inside its body, the smallest change a
newer release can ship (``CREATE OR REPLACE``, the same signature and
meaning). Which release a process runs is its environment: ``env("old",
...)`` or ``env("head", ...)``.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

CHECKOUT = Path(__file__).resolve().parents[1]

CHANGED = "workhorse_succeed_many_v1"
"""The function the newer side re-creates: every success of both workers
goes through it once the migration ran."""

CHANGE = "-- re-created by the upgrade test's newer release"
"""The line the newer side adds at the top of ``CHANGED``'s body."""

DELAY = 10
"""Seconds to the due time of the scheduled job, the retry of the failing
one and the end of the durable sleep: long enough that each still waits
when the migration runs, a second or two after they were enqueued."""

SHUTDOWN_GRACE = 5
"""Seconds a stopping worker waits for its running jobs (the settings')."""

SETTINGS = """
import os
from pathlib import Path

SECRET_KEY = "upgrade-test-not-secret"
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django_workhorse",
    "upgradeapp",
]
# The server comes from libpq's PGHOST, PGPORT and PGUSER.
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ["UPGRADE_DATABASE"],
    }
}
USE_TZ = True
WORKHORSE = {
    "WORKER_ID": os.environ["UPGRADE_SIDE"],
    "POLL_INTERVAL": 1,
    "SHUTDOWN_GRACE": __grace__,
}
if os.environ["UPGRADE_SIDE"] == "head":
    MIGRATION_MODULES = {"django_workhorse": "head_migrations"}
RECORDS = Path(os.environ["UPGRADE_RECORDS"])
""".replace("__grace__", str(SHUTDOWN_GRACE))

MANAGE = """
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "upgradesite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
"""

JOBS = f"""
import json
import time

from django.conf import settings

import django_workhorse as workhorse

DELAY = {DELAY}


def note(label, event):
    \"\"\"One line in the records file for this run of the job.\"\"\"
    ctx = workhorse.current_job()
    line = json.dumps(
        {{"label": label, "event": event, "attempt": ctx.attempt, "worker": ctx.worker_id}}
    )
    with open(settings.RECORDS, "a") as records:
        records.write(line + "\\n")


def stage(label, name, result=None):
    \"\"\"A checkpoint whose function notes that it ran.\"\"\"

    def run():
        note(label, f"stage:{{name}}")
        return result

    return workhorse.current_job().checkpoint(name, run)


def wait_for(name, seconds=120):
    path = settings.RECORDS.parent / name
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{{path}} did not appear within {{seconds}} s")
        time.sleep(0.05)


@workhorse.job
def record(label: str) -> str:
    note(label, "run")
    note(label, "done")
    return label


@workhorse.job(max_attempts=3, backoff=workhorse.fixed(DELAY))
def flaky(label: str) -> str:
    note(label, "run")
    stage(label, "charge")
    if workhorse.current_job().attempt == 1:
        raise ConnectionError("fails its first attempt, after its checkpoint")
    note(label, "done")
    return label


@workhorse.job
def nap(label: str) -> str:
    note(label, "run")
    stage(label, "before")
    workhorse.current_job().sleep("nap", DELAY)
    note(label, "done")
    return label


@workhorse.job(priority=10)
def hold(label: str) -> str:
    \"\"\"Runs until the test creates the file finish-holds.\"\"\"
    note(label, "run")
    wait_for("finish-holds")
    note(label, "done")
    return label


@workhorse.job(priority=10)
def outlast(label: str) -> str:
    \"\"\"Its first run outlasts any shutdown grace; a later run (of another
    worker, once the first was released) finishes at once.\"\"\"
    ctx = workhorse.current_job()
    note(label, "run")
    if stage(label, "started", ctx.worker_id) == ctx.worker_id:
        wait_for("never")
    note(label, "done")
    return label
"""

HEAD_MIGRATION = '''
"""The checkout's migration {name}, as the package has it."""

import importlib

Migration = importlib.import_module("django_workhorse.migrations.{name}").Migration
'''

CHANGE_MIGRATION = f'''
"""A newer release's trivial SQL change: {CHANGED} with a comment added."""

from django.db import migrations

from django_workhorse.db.sql_files import read_sql

NEWER = read_sql("{CHANGED}.sql").replace("AS $$", "AS $$\\n{CHANGE}", 1)


class Migration(migrations.Migration):
    dependencies = [("django_workhorse", "{{last}}")]

    operations = [migrations.RunSQL(NEWER, reverse_sql=migrations.RunSQL.noop)]
'''

CHANGE_MIGRATION_NAME = "9999_trivial_sql_change"

ENQUEUE_BEFORE = """
import json

from upgradeapp import jobs

handles = {}
for label in ("hold-1", "hold-2", "hold-3"):
    handles[label] = jobs.hold.enqueue(label=label)
handles["outlast"] = jobs.outlast.enqueue(label="outlast")
for label in ("ready-1", "ready-2"):
    handles[label] = jobs.record.enqueue(label=label)
handles["scheduled"] = jobs.record.options(delay=jobs.DELAY).enqueue(label="scheduled")
handles["retrying"] = jobs.flaky.enqueue(label="retrying")
handles["sleeping"] = jobs.nap.enqueue(label="sleeping")
for label, prerequisite in (
    ("after-hold-1", "hold-1"),
    ("after-outlast", "outlast"),
    ("after-retrying", "retrying"),
    ("after-sleeping", "sleeping"),
):
    handles[label] = jobs.record.options(depends_on=[handles[prerequisite]]).enqueue(label=label)
print(json.dumps({label: handle.id for label, handle in handles.items()}))
"""
"""Run by the released side before the migration: jobs of every kind."""

ENQUEUE_AFTER = """
import json
import os

from upgradeapp import jobs

handles = {
    "late-ready": jobs.record.enqueue(label="late-ready"),
    "late-after-hold-2": jobs.record.options(
        depends_on=[int(os.environ["UPGRADE_HOLD_2"])]
    ).enqueue(label="late-after-hold-2"),
}
print(json.dumps({label: handle.id for label, handle in handles.items()}))
"""
"""Run by the released side after the migration, as its web servers would."""


class UpgradeProject:
    """The project's files under ``root``, on the database ``database``."""

    def __init__(self, root: Path, database: str, server_env: dict[str, str]) -> None:
        self.root = root
        self.database = database
        self.server_env = server_env
        self.records_path = root / "records.jsonl"
        files = {
            "manage.py": MANAGE,
            "upgradesite/__init__.py": "",
            "upgradesite/settings.py": SETTINGS,
            "upgradeapp/__init__.py": "",
            "upgradeapp/jobs.py": JOBS,
            **head_migrations(),
        }
        for name, text in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip())

    def env(self, side: str, base: dict[str, str]) -> dict[str, str]:
        """The environment of a process of ``side`` ("old" or "head"):
        ``base`` (a virtualenv's, or this run's), then the project's."""
        path = [str(self.root)] if side == "old" else [str(CHECKOUT), str(self.root)]
        return {
            **{k: v for k, v in base.items() if not k.startswith(("DJANGO_", "PYTHON"))},
            **self.server_env,
            "PYTHONPATH": os.pathsep.join(path),
            "PYTHONUNBUFFERED": "1",
            "DJANGO_SETTINGS_MODULE": "upgradesite.settings",
            "UPGRADE_SIDE": side,
            "UPGRADE_DATABASE": self.database,
            "UPGRADE_RECORDS": str(self.records_path),
        }

    def touch(self, name: str) -> None:
        """Create the file a job waits for (``wait_for(name)``)."""
        (self.root / name).touch()

    def records(self) -> list[dict[str, Any]]:
        """What the jobs noted, in order: label, event, attempt, worker."""
        if not self.records_path.exists():
            return []
        return [json.loads(line) for line in self.records_path.read_text().splitlines()]


def head_migrations() -> dict[str, str]:
    """The files of the ``head_migrations`` package: each migration of the
    checkout, imported, then the trivial SQL change after the last."""
    names = sorted(
        path.stem for path in (CHECKOUT / "django_workhorse" / "migrations").glob("[0-9]*.py")
    )
    files = {"head_migrations/__init__.py": ""}
    for name in names:
        files[f"head_migrations/{name}.py"] = HEAD_MIGRATION.format(name=name)
    files[f"head_migrations/{CHANGE_MIGRATION_NAME}.py"] = CHANGE_MIGRATION.replace(
        "{last}", names[-1]
    )
    return files
