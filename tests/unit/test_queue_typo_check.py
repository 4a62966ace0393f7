"""``manage.py check`` reads the project's source for the queues it names
(``queue=`` of a ``@job`` or an ``.options(...)``) and warns of one that a
worker started without ``--queues`` does not serve: workhorse.W010, with
the served queues it looks like (docs/settings.md). The source is read, not
imported, so the warning is the same whatever the checking process
imported. The project here is a real installed app made in a temporary
folder."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.checks import run_checks
from django.test import override_settings

from django_workhorse.operations.code_queues import mentions_in

APP = "typoapp"


@pytest.fixture
def project_app(tmp_path, monkeypatch):
    """Writes the files of an installed app ``typoapp`` and installs it."""
    package = tmp_path / APP
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "apps.py").write_text(
        "from django.apps import AppConfig\n\n\nclass TypoappConfig(AppConfig):\n"
        f"    name = {APP!r}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(files: dict[str, str]) -> list:
        for name, code in files.items():
            path = package / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(code))
        with override_settings(INSTALLED_APPS=[*django_settings.INSTALLED_APPS, APP]):
            found = [
                m for m in run_checks(tags=["workhorse"], databases=[]) if m.id == "workhorse.W010"
            ]
        for module in [m for m in sys.modules if m == APP or m.startswith(APP + ".")]:
            del sys.modules[module]
        return found

    return write


def test_a_mistyped_queue_in_options_is_W010_naming_the_place_and_the_queue_meant(project_app):
    (warning,) = project_app(
        {
            "views.py": """
            from jobtests.jobs import record

            def order(request):
                record.options(queue="jobtests.recrod").enqueue()
            """
        }
    )

    assert warning.obj == "jobtests.recrod"
    assert "queue 'jobtests.recrod' (named at " in warning.msg
    assert f"{APP}/views.py:5)" in warning.msg
    assert "a worker started without --queues does not serve it" in warning.msg
    assert warning.hint.startswith("Did you mean 'jobtests.record'")
    assert "WORKHORSE['QUEUES'] ({'jobtests.recrod': {}})" in warning.hint


def test_W010_does_not_depend_on_the_module_being_imported(project_app):
    found = project_app(
        {
            "reports.py": "import django_workhorse as workhorse\n\n"
            "@workhorse.job(queue='typo-reports')\ndef monthly():\n    pass\n"
        }
    )

    assert f"{APP}.reports" not in sys.modules
    assert [w.obj for w in found] == ["typo-reports"]


def test_a_queue_a_setting_or_a_job_known_at_start_uses_is_not_W010(project_app, settings):
    settings.WORKHORSE = {**settings.WORKHORSE, "QUEUES": {"typo-named": {}}}

    found = project_app(
        {
            "views.py": """
            from jobtests.jobs import record

            def order(request):
                record.options(queue="jobtests.record").enqueue()
                record.options(queue="typo-named").enqueue()
                record.options(queue="default").enqueue()
            """
        }
    )

    assert found == []


def test_test_modules_and_migrations_are_not_read(project_app):
    code = "from jobtests.jobs import record\nrecord.options(queue='typo-in-tests')\n"

    found = project_app({"tests.py": code, "test_views.py": code, "migrations/0001_x.py": code})

    assert found == []


def test_only_literal_queues_of_job_and_options_calls_are_read():
    source = textwrap.dedent(
        """
        @workhorse.job(queue="a", using="second")
        def f(): ...
        job(queue="b")
        f.options(queue=QUEUE)
        other(queue="c")
        """
    )

    found = mentions_in(source, Path("x.py"))

    assert [(m.queue, m.line, m.using) for m in found] == [("a", 2, "second"), ("b", 4, None)]
