"""A job name read from the database never makes this process import a
module outside the installed apps (docs/worker.md, "Where jobs are found")."""

from __future__ import annotations

import sys

import pytest

import django_workhorse as workhorse
from django_workhorse.core import registry
from django_workhorse.core.discovery import may_import
from django_workhorse.tasks.backend import resolve_task_job, task_at

SPY = """
from pathlib import Path

Path(__file__).with_name("imported").touch()


def run(**kwargs):
    return None
"""


@pytest.fixture
def spy(tmp_path, monkeypatch):
    """A package outside the installed apps that records its own import."""
    package = tmp_path / "outside_spy"
    package.mkdir()
    (package / "__init__.py").write_text(SPY)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield package / "imported"
    sys.modules.pop("outside_spy", None)


def test_a_name_outside_the_installed_apps_is_unknown_without_an_import(spy):
    with pytest.raises(workhorse.UnknownJobError):
        registry.get("outside_spy.run")
    assert registry.all_jobs().get("outside_spy.run") is None
    assert resolve_task_job("outside_spy.run") is None
    assert task_at("outside_spy.run") is None
    assert not spy.exists()


def test_what_a_stored_name_may_import():
    assert may_import("jobtests.reports")  # inside an installed app
    assert may_import("os.path")  # imported already: nothing runs
    assert not may_import("outside_spy")
    assert not may_import("jobtests.tests.test_reports")  # an app's test module
