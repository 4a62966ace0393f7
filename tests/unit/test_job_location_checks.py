"""A job of the project's code that no worker would find is named by
``manage.py check`` (workhorse.W005, workhorse.W006) and refused at enqueue,
with the module and the two fixes (docs/worker.md, "Where jobs are found")."""

from __future__ import annotations

import pytest

import django_workhorse as workhorse
from django_workhorse.core import registry
from django_workhorse.operations.checks import check_job_locations


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch):
    monkeypatch.setattr(registry, "_jobs", dict(registry._jobs))


def defined_in(
    module: str, *, name: str | None = None, queue: str | None = None
) -> workhorse.JobDefinition:
    """A job as if ``@workhorse.job(name=..., queue=...)`` ran in ``module``
    after app loading."""

    def handler() -> None: ...

    handler.__module__ = module
    handler.__qualname__ = "handler"
    definition = workhorse.JobDefinition(handler, name=name, queue=queue)
    registry.register(definition)
    return definition


def warnings_for(name: str):
    return [m for m in check_job_locations() if m.obj == name]


def test_a_renamed_job_in_a_module_app_loading_skips_is_W005_naming_both_fixes():
    defined_in("jobtests.reports", name="monthly-report")

    (warning,) = warnings_for("monthly-report")

    assert warning.id == "workhorse.W005"
    assert "defined in jobtests.reports, which app loading does not import" in warning.msg
    assert "jobtests/jobs.py" in warning.hint
    assert "drop name='monthly-report'" in warning.hint
    assert "jobtests.reports.handler" in warning.hint


def test_a_job_named_by_its_path_inside_an_installed_app_is_found_without_a_warning():
    defined_in("jobtests.reports")

    assert warnings_for("jobtests.reports.handler") == []


def test_a_job_in_the_settings_package_is_W006_naming_both_fixes():
    defined_in("testproject.jobs")

    (warning,) = warnings_for("testproject.jobs.handler")

    assert warning.id == "workhorse.W006"
    assert "defined in testproject.jobs, which is in no app of INSTALLED_APPS" in warning.msg
    assert "Add 'testproject' to INSTALLED_APPS" in warning.hint
    assert "jobs.py of an installed app" in warning.hint


def test_a_job_outside_the_project_code_is_left_alone():
    # A test suite or a script may define jobs that its own process runs.
    defined_in("tests.some_suite")

    assert warnings_for("tests.some_suite.handler") == []


def test_enqueue_of_a_job_no_worker_would_find_is_refused_with_the_fix():
    job = defined_in("jobtests.reports", name="monthly-report")

    with pytest.raises(workhorse.UnknownJobError) as refused:
        job.enqueue()

    message = str(refused.value)
    assert "defined in jobtests.reports" in message
    assert "define it in jobtests/jobs.py" in message
    assert message.endswith("nothing was enqueued")


def test_a_job_found_by_its_path_on_a_queue_no_worker_serves_by_default_is_W007():
    defined_in("jobtests.reports", queue="reports-only")

    (warning,) = warnings_for("jobtests.reports.handler")

    assert warning.id == "workhorse.W007"
    assert "its queue 'reports-only' is used by no job a worker knows at start" in warning.msg
    assert "Name it in WORKHORSE['QUEUES'] ({'reports-only': {}})" in warning.hint
    assert "start a worker with --queues reports-only" in warning.hint


def test_a_job_found_by_its_path_on_the_default_queue_needs_nothing_more():
    defined_in("jobtests.reports")

    assert warnings_for("jobtests.reports.handler") == []
