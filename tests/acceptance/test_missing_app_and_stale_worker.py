"""Two first-hour loops, run as a user runs them in a small project of its
own (tests/small_project.py):

- ``django_workhorse`` missing from ``INSTALLED_APPS``: enqueue (the native
  API and the Tasks backend) and ``migrate`` say to add it, rather than
  "run migrate", which answers "No migrations to apply";
- a worker started before ``jobs.py`` was edited: the new job's attempt says
  to restart the workers started before the code changed
  (docs/getting-started.md: workers do not reload code)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.helpers import poll_until
from tests.small_project import SmallProject, fresh_database, server_of_tests

WITHOUT_APP = """
from .settings import *  # noqa: F403

INSTALLED_APPS = [app for app in INSTALLED_APPS if app != "django_workhorse"]  # noqa: F405
"""
ADD_INSTALLED = "add 'django_workhorse' to INSTALLED_APPS, then run `manage.py migrate`"


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


@pytest.fixture
def project_without_the_app(tmp_path) -> Iterator[SmallProject]:
    server = server_of_tests()
    with fresh_database(server) as name:
        project = SmallProject(tmp_path / "site", name, server)
        (project.root / "site_settings" / "without_app.py").write_text(WITHOUT_APP)
        yield project


def shell_without_the_app(project: SmallProject, code: str) -> subprocess.CompletedProcess[str]:
    return project.manage("shell", "--settings=site_settings.without_app", "-v", "0", "-c", code)


def test_a_native_enqueue_without_the_app_says_to_add_it(project_without_the_app):
    done = shell_without_the_app(
        project_without_the_app, "from myapp.jobs import hello; hello.enqueue()"
    )

    assert done.returncode == 1
    assert last_line(done.stderr) == (
        "django_workhorse.exceptions.SchemaVersionError: database 'default' has no "
        f"django-workhorse tables, and django_workhorse is not in INSTALLED_APPS: {ADD_INSTALLED}"
    )


def test_a_task_enqueue_without_the_app_says_to_add_it(project_without_the_app):
    done = shell_without_the_app(
        project_without_the_app, "from myapp.tasks import shout; shout.enqueue('x')"
    )

    assert done.returncode == 1
    assert "InvalidTask: task myapp.tasks.shout: database 'default' has no" in last_line(
        done.stderr
    )
    assert last_line(done.stderr).endswith(ADD_INSTALLED)


def test_check_and_migrate_without_the_app_say_E103_though_django_tasks_was_not_imported(
    project_without_the_app,
):
    """``myapp.models`` imports its jobs (to enqueue on save, say): workhorse
    is imported while the apps load, ``django.tasks`` is not."""
    (project_without_the_app.root / "myapp" / "models.py").write_text(
        "from . import jobs  # noqa\n"
    )
    settings = "--settings=site_settings.without_app"
    imported = shell_without_the_app(
        project_without_the_app, "import sys; print('django.tasks' in sys.modules)"
    )
    assert imported.stdout.strip() == "False", imported.stderr

    checked = project_without_the_app.manage("check", settings)
    migrated = project_without_the_app.manage("migrate", settings)

    for done in (checked, migrated):
        assert done.returncode == 1
        assert (
            "(workhorse.E103) TASKS['default'] uses the workhorse backend but django_workhorse "
            "is not in INSTALLED_APPS" in done.stderr
        )
        assert "Add 'django_workhorse' to INSTALLED_APPS, then run `manage.py migrate`." in (
            done.stderr
        )
    assert "No migrations to apply" not in migrated.stdout


# -- a worker started before the code changed ------------------------------------

ADDED_JOB = """

@workhorse.job
def added_later() -> str:
    return "added"
"""


@pytest.fixture
def migrated_project(tmp_path) -> Iterator[SmallProject]:
    server = server_of_tests()
    with fresh_database(server) as name:
        project = SmallProject(tmp_path / "site", name, server)
        done = project.manage("migrate", "-v", "0")
        assert done.returncode == 0, done.stderr
        yield project


def test_a_job_added_after_the_worker_started_says_to_restart_it(migrated_project, tmp_path):
    log = (tmp_path / "worker.stderr").open("w+")
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "runworker", "-v", "2", "--queues", "default"],
        cwd=migrated_project.root,
        env=migrated_project.env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        poll_until(
            lambda: "serving" in (tmp_path / "worker.stderr").read_text(),
            timeout=30,
            interval=0.05,
            what="the worker is ready",
        )
        with (migrated_project.root / "myapp" / "jobs.py").open("a") as jobs:
            jobs.write(ADDED_JOB)
        enqueued = migrated_project.shell(
            "from myapp.jobs import added_later; print(added_later.enqueue().id)"
        )
        assert enqueued.returncode == 0, enqueued.stderr
        job_id = int(enqueued.stdout.strip())

        def error() -> str | None:
            done = migrated_project.shell(
                f"import django_workhorse as w; s = w.Admin().get_job({job_id}); "
                "print(s.error['message'] if s.error else '')"
            )
            return done.stdout.strip() or None

        message = poll_until(error, timeout=30, interval=0.2, what="the attempt failed")
    finally:
        worker.terminate()
        worker.wait(20)
        log.close()
    assert message.startswith("no job named 'myapp.jobs.added_later' is registered in worker ")
    assert (
        "its module myapp.jobs changed after worker" in message
        and "workers do not reload code: restart the workers started before the code changed"
        in message
    )
