"""The first hour of a new project, run as a user runs it: ``manage.py`` in a
small project of its own (tests/small_project.py). Each common mistake is
answered with one line that names the fix, and a job is found where it is
defined (docs/getting-started.md, docs/worker.md "Where jobs are found")."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.small_project import SmallProject, fresh_database, server_of_tests


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


@pytest.fixture
def sqlite_project(tmp_path) -> SmallProject:
    return SmallProject(tmp_path / "site", "sqlite", server_of_tests())


@pytest.fixture
def unmigrated_project(tmp_path) -> Iterator[SmallProject]:
    server = server_of_tests()
    with fresh_database(server) as name:
        yield SmallProject(tmp_path / "site", name, server)


@pytest.fixture(scope="module")
def migrated_project(tmp_path_factory) -> Iterator[SmallProject]:
    server = server_of_tests()
    with fresh_database(server) as name:
        project = SmallProject(tmp_path_factory.mktemp("migrated") / "site", name, server)
        done = project.manage("migrate", "-v", "0")
        assert done.returncode == 0, done.stderr
        yield project


# -- SQLite, startproject's default ---------------------------------------------


def test_check_reports_a_sqlite_store_as_E004(sqlite_project):
    done = sqlite_project.manage("check")

    assert done.returncode == 1
    assert "(workhorse.E004) database 'default' is SQLite" in done.stderr
    assert "django-workhorse needs PostgreSQL" in done.stderr
    assert "'django.db.backends.postgresql'" in done.stderr


def test_runworker_on_sqlite_refuses_in_one_line(sqlite_project):
    done = sqlite_project.manage("runworker", "--burst")

    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().startswith("CommandError: database 'default' is SQLite")
    assert len(done.stderr.strip().splitlines()) == 1


def test_migrate_on_sqlite_stops_before_applying_anything(sqlite_project):
    done = sqlite_project.manage("migrate")

    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "(workhorse.E004) database 'default' is SQLite" in done.stderr
    assert "Applying" not in done.stdout


def test_migrate_on_sqlite_skipping_checks_still_refuses_in_one_line(sqlite_project):
    done = sqlite_project.manage("migrate", "--skip-checks")

    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert last_line(done.stderr).startswith("CommandError: database 'default' is SQLite")
    assert "Applying django_workhorse" not in done.stdout


def test_enqueue_on_sqlite_raises_one_line_naming_the_fix(sqlite_project):
    done = sqlite_project.shell("from myapp.jobs import hello; hello.enqueue()")

    assert done.returncode == 1
    assert last_line(done.stderr).startswith(
        "django.core.exceptions.ImproperlyConfigured: database 'default' is SQLite"
    )
    assert "needs PostgreSQL" in last_line(done.stderr)
    assert "sqlite3.OperationalError" not in done.stderr  # the driver's error is not chained


# -- before migrate -------------------------------------------------------------


def test_enqueue_before_migrate_says_run_migrate(unmigrated_project):
    done = unmigrated_project.shell("from myapp.jobs import hello; hello.enqueue()")

    assert done.returncode == 1
    assert last_line(done.stderr) == (
        "django_workhorse.exceptions.SchemaVersionError: database 'default' has no "
        "django-workhorse tables yet: run `manage.py migrate`"
    )
    assert "HINT" not in done.stderr  # PostgreSQL's hint about type casts misleads


RUN_MIGRATE = (
    "CommandError: database 'default' has no django-workhorse tables yet: run `manage.py migrate`"
)


@pytest.mark.parametrize(
    "command",
    [
        ["workhorse_status"],
        ["workhorse_prune"],
        ["workhorse_queue", "pause", "default"],
        ["workhorse_repair_sql"],
    ],
    ids=lambda command: command[0],
)
def test_an_operator_command_before_migrate_says_run_migrate(unmigrated_project, command):
    done = unmigrated_project.manage(*command)

    assert done.returncode == 1
    assert done.stderr.strip() == RUN_MIGRATE


def test_migrate_does_not_warn_that_migrate_should_run(unmigrated_project):
    warned = unmigrated_project.manage("check", "--database", "default")
    assert "workhorse.W002" in warned.stderr  # check still says it

    done = unmigrated_project.manage("migrate")

    assert done.returncode == 0, done.stderr
    assert "Applying django_workhorse.0001_initial... OK" in done.stdout
    assert "W002" not in done.stdout + done.stderr


# -- a job outside jobs.py ------------------------------------------------------


def test_a_job_outside_jobs_py_runs_under_runworker(migrated_project):
    enqueued = migrated_project.shell(
        "from myapp.tasks_elsewhere import report; print(report.enqueue(label='monthly').id)"
    )
    assert enqueued.returncode == 0, enqueued.stderr
    job_id = int(enqueued.stdout.strip())

    done = migrated_project.manage("runworker", "--burst")

    assert done.returncode == 0, done.stderr
    assert migrated_project.marker("report-monthly").exists()
    state = migrated_project.shell(
        f"import django_workhorse as w, json; s = w.Admin().get_job({job_id}); "
        "print(json.dumps([s.state, s.result]))"
    )
    assert json.loads(state.stdout) == ["succeeded", "monthly"]


def test_a_renamed_job_no_worker_would_find_is_refused_at_enqueue_in_one_line(migrated_project):
    done = migrated_project.shell("from myapp.renamed import monthly; monthly.enqueue()")

    assert done.returncode == 1
    line = last_line(done.stderr)
    assert line.startswith(
        "django_workhorse.exceptions.UnknownJobError: job 'monthly-report' is defined in "
        "myapp.renamed, which app loading does not import"
    )
    assert "define it in myapp/jobs.py (or import it there), or drop name=" in line
    assert line.endswith("nothing was enqueued")


def test_a_job_of_a_nested_app_missing_from_installed_apps_is_refused_at_enqueue_naming_it(
    migrated_project,
):
    done = migrated_project.shell("from nested.billing.jobs import invoice; invoice.enqueue()")

    assert done.returncode == 1
    line = last_line(done.stderr)
    assert line.startswith(
        "django_workhorse.exceptions.UnknownJobError: job 'nested.billing.jobs.invoice' is "
        "defined in nested.billing.jobs, which is in no app of INSTALLED_APPS"
    )
    assert "add 'nested.billing' to INSTALLED_APPS" in line
    assert line.endswith("nothing was enqueued")


def test_check_reports_a_job_of_a_nested_app_missing_from_installed_apps_as_W006(
    migrated_project,
):
    done = migrated_project.shell(
        """
        import nested.billing.jobs  # as a view of the project would
        from django.core.management import call_command
        call_command("check")
        """
    )

    assert "(workhorse.W006) job 'nested.billing.jobs.invoice'" in done.stderr
    assert "HINT: Add 'nested.billing' to INSTALLED_APPS" in done.stderr


def test_enqueue_by_name_of_a_job_whose_module_does_not_import_names_the_import_error(
    migrated_project,
):
    done = migrated_project.shell(
        "import django_workhorse as w; w.enqueue('myapp.brittle.fragile')"
    )

    assert done.returncode == 1
    line = last_line(done.stderr)
    assert line.startswith(
        "django_workhorse.exceptions.UnknownJobError: no job named 'myapp.brittle.fragile'"
    )
    assert line.endswith(
        "its module could not be imported (ModuleNotFoundError: No module named "
        "'missing_dependency_of_myapp'): fix that import"
    )


ENQUEUE_FROM_SQL = """
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute(
        "SELECT job_id FROM workhorse_enqueue_v1(%s, 'default', %s, 1)",
        ["outsider.spy.run", '{"backend": "default", "args": [], "kwargs": {}}'],
    )
    print(cursor.fetchone()[0])
"""


def spy_imports(project: SmallProject) -> list[str]:
    return sorted(p.name for p in project.markers.glob("spy-imported-*"))


def test_a_stored_name_outside_the_installed_apps_is_never_imported_by_the_worker(
    migrated_project,
):
    enqueued = migrated_project.shell(ENQUEUE_FROM_SQL)
    assert enqueued.returncode == 0, enqueued.stderr
    job_id = int(enqueued.stdout.strip())

    done = migrated_project.manage("runworker", "--burst")

    assert done.returncode == 0, done.stderr
    assert spy_imports(migrated_project) == []
    state = migrated_project.shell(
        f"import django_workhorse as w, json; s = w.Admin().get_job({job_id}); "
        "print(json.dumps([s.state, s.error['type'], s.error['message']]))"
    )
    outcome, error_type, message = json.loads(state.stdout)
    assert (outcome, error_type) == ("failed", "django_workhorse.exceptions.UnknownJobError")
    assert "no job named 'outsider.spy.run' is registered" in message


def test_a_stored_name_outside_the_installed_apps_is_never_imported_by_get_result(
    migrated_project,
):
    enqueued = migrated_project.shell(ENQUEUE_FROM_SQL)
    job_id = int(enqueued.stdout.strip())

    read = migrated_project.shell(
        f"""
        from django_workhorse.tasks.compat import TaskResultDoesNotExist, task_backends
        try:
            task_backends["default"].get_result("{job_id}")
        except TaskResultDoesNotExist as exc:
            print("does not exist:", exc)
        """
    )

    assert read.returncode == 0, read.stderr
    assert read.stdout.startswith("does not exist:")
    assert spy_imports(migrated_project) == []


# -- logs with startproject's settings (DEBUG=True, Django's default LOGGING) ----

ENQUEUE_BOTH = """
from myapp.jobs import hello
from myapp.tasks import shout
print(hello.enqueue(name="logs").id, shout.enqueue("logs").id)
"""


def lines_with(text: str, *parts: str) -> list[str]:
    return [line for line in text.splitlines() if all(part in line for part in parts)]


def test_a_verbose_worker_under_debug_prints_each_event_once(migrated_project):
    enqueued = migrated_project.shell(ENQUEUE_BOTH)
    assert enqueued.returncode == 0, enqueued.stderr
    job_id, task_id = enqueued.stdout.split()

    done = migrated_project.manage("runworker", "--burst", "-v", "2")

    assert done.returncode == 0, done.stderr
    log = done.stderr
    assert len(lines_with(log, "workhorse worker ", " serving ")) == 1
    assert (
        len(lines_with(log, f"job myapp.jobs.hello default #{job_id} attempt 1/", "started")) == 1
    )
    assert len(lines_with(log, f"job myapp.jobs.hello default #{job_id} succeeded in ")) == 1
    # A task's start and end are Django's lines (django.tasks), each printed once.
    assert len(lines_with(log, f"Task id={task_id} path=myapp.tasks.shout state=RUNNING")) == 1
    assert len(lines_with(log, f"Task id={task_id} path=myapp.tasks.shout state=SUCCESSFUL")) == 1
    assert lines_with(log, "job myapp.tasks.shout") == []


def test_a_quiet_worker_prints_nothing_for_a_job_that_succeeds(migrated_project):
    enqueued = migrated_project.shell("from myapp.jobs import hello; print(hello.enqueue().id)")
    job_id = enqueued.stdout.strip()

    done = migrated_project.manage("runworker", "--burst")

    assert done.returncode == 0, done.stderr
    assert lines_with(done.stderr, f"#{job_id}") == []
    assert lines_with(done.stderr, " serving ") == []


def test_a_task_attempt_that_will_be_retried_prints_no_traceback(migrated_project):
    enqueued = migrated_project.shell("from myapp.tasks import broken; print(broken.enqueue().id)")
    assert enqueued.returncode == 0, enqueued.stderr
    task_id = enqueued.stdout.strip()

    done = migrated_project.manage("runworker", "--burst")

    assert done.returncode == 0, done.stderr
    log = done.stderr
    retried = lines_with(log, f"#{task_id} attempt 1/", "RuntimeError: broken task; retrying")
    assert len(retried) == 1
    assert len(lines_with(log, f"Task id={task_id} path=myapp.tasks.broken state=READY")) == 1
    assert "Traceback" not in log


# -- the Tasks backend named by another path ------------------------------------

OWN_BACKEND = """
from django_workhorse.tasks import WorkhorseBackend


class ProjectBackend(WorkhorseBackend):
    pass
"""


@pytest.mark.parametrize(
    "backend",
    ["django_workhorse.tasks.backend.WorkhorseBackend", "myapp.backends.ProjectBackend"],
)
def test_runworker_serves_the_tasks_queues_of_a_backend_named_by_another_path(
    migrated_project, backend
):
    (migrated_project.root / "myapp" / "backends.py").write_text(OWN_BACKEND)
    tasks = f"{{'default': {{'BACKEND': {backend!r}, 'QUEUES': ['default', 'queue-1']}}}}"
    task_id, done = run_a_task_under(migrated_project, "other_backend", tasks, "queue-1")

    assert done.returncode == 0, done.stderr
    assert f"Task id={task_id} path=myapp.tasks.shout state=SUCCESSFUL" in done.stderr


def test_runworker_serves_a_queue_named_by_no_setting_beside_a_backend_that_allows_any(
    migrated_project,
):
    tasks = "{'default': {'BACKEND': 'django_workhorse.tasks.WorkhorseBackend', 'QUEUES': []}}"
    task_id, done = run_a_task_under(migrated_project, "any_queue", tasks, "reports")

    assert done.returncode == 0, done.stderr
    assert f"Task id={task_id} path=myapp.tasks.shout state=SUCCESSFUL" in done.stderr


def run_a_task_under(project, module: str, tasks: str, queue: str):
    """With settings ``site_settings.<module>`` (the project's own, and
    ``TASKS = <tasks>``): enqueue ``shout`` on ``queue``, then run
    ``runworker --queues <queue> --burst``; the task's id and the run."""
    (project.root / "site_settings" / f"{module}.py").write_text(
        f"from .settings import *\nTASKS = {tasks}\n"
    )
    settings = f"--settings=site_settings.{module}"
    enqueued = project.manage(
        "shell",
        settings,
        "-v",
        "0",
        "-c",
        f"from myapp.tasks import shout; print(shout.using(queue_name={queue!r}).enqueue('x').id)",
    )
    assert enqueued.returncode == 0, enqueued.stderr
    return enqueued.stdout.strip(), project.manage(
        "runworker", settings, "--queues", queue, "--burst"
    )


REPORTING = """
import django_workhorse as workhorse


@workhorse.job(queue="reports")
def monthly() -> str:
    return "reported"
"""


def test_a_job_found_by_its_path_on_a_queue_named_in_workhorse_queues_runs_under_runworker(
    migrated_project,
):
    # W007's fix: the job's module is not imported at start, its queue is named.
    (migrated_project.root / "myapp" / "reporting.py").write_text(REPORTING)
    (migrated_project.root / "site_settings" / "reports_queue.py").write_text(
        "from .settings import *\nWORKHORSE = {'QUEUES': {'reports': {}}}\n"
    )
    settings = "--settings=site_settings.reports_queue"
    enqueued = migrated_project.manage(
        "shell",
        settings,
        "-v",
        "0",
        "-c",
        "from myapp.reporting import monthly; print(monthly.enqueue().id)",
    )
    assert enqueued.returncode == 0, enqueued.stderr
    job_id = int(enqueued.stdout.strip())

    done = migrated_project.manage("runworker", settings, "--burst")

    assert done.returncode == 0, done.stderr
    state = migrated_project.shell(
        f"import django_workhorse as w; s = w.Admin().get_job({job_id}); print(s.state)"
    )
    assert state.stdout.strip() == "succeeded"
