"""Every code example of the newcomer docs runs here, so the docs cannot rot.

Each page's ```python blocks run in order in one fresh module (so that the
Tasks backend can import the tasks a page defines by their path), inside a
test transaction. A block that only assigns UPPERCASE names is a settings
example: ``TASKS`` and ``WORKHORSE`` are checked by the system checks, and
``TASKS`` is in force for the page's later blocks. A page's ``test_*``
functions are then called (``workhorse_jobs`` given as the fixture would),
except on the pages of ``PYTEST_PAGES``: there the page's blocks become a
test module of a pytest run of its own, with the page's ``pytest_plugins``
in its conftest, so that its tests run as a user's would, under their
markers, with the fixture's set-up and teardown.
```console blocks: each ``python manage.py ...`` line must parse with that
command's own parser; ``pip install`` lines and the shell commands that start a
project (``SHELL_COMMANDS``) are not run here: tests/docs/test_getting_started_runs.py
runs getting-started.md's, in a virtualenv of their own.
On Django 5.2, ``django.tasks`` imports are read as the backport's.
"""

from __future__ import annotations

import ast
import inspect
import re
import shlex
import sys
import types
from pathlib import Path

import django
import pytest
from django.core.checks import run_checks
from django.core.management import get_commands, load_command_class
from django.test import override_settings

from django_workhorse.core.conf import DEFAULTS, problems
from django_workhorse.testing import WorkhorseJobs
from tests.helpers import run_pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = [
    "getting-started.md",
    "django-tasks.md",
    "testing.md",
    "migrating.md",
    "durable-execution.md",
]
PYTEST_PAGES = ["testing.md"]
"""Pages whose test functions run under pytest itself (see the docstring)."""
COMMAND_PAGES = [*PAGES, "upgrading.md"]
"""Pages whose ```console commands must parse: the newcomer pages and the
operator's pages that show commands without Python examples."""
WORKER_RAN_BEFORE = {"getting-started.md": "handle.refresh()"}
"""A block starting so follows the page's ``runworker``: ``run_jobs()`` stands
in for it here (tests/docs/test_getting_started_runs.py runs the real one)."""
SHELL_COMMANDS = {("django-admin", "startproject"), ("cd",), ("createdb",)}
"""Console lines that are not ``python manage.py``: how a new project starts."""
TEST_FILE_RE = re.compile(r"go in a test module of your app that pytest\s+collects, `([\w/]+\.py)`")
"""Where a pytest page says its examples go (``myapp/tests/test_jobs.py``)."""
BLOCK_RE = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(page: str, language: str) -> list[str]:
    text = (DOCS / page).read_text()
    return [code for lang, code in BLOCK_RE.findall(text) if lang == language]


def is_settings(code: str) -> bool:
    body = ast.parse(code).body
    return bool(body) and all(
        isinstance(node, ast.Assign)
        and all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets)
        for node in body
    )


WHERE_JOBS_ARE_FOUND = {"workhorse.W005", "workhorse.W006", "workhorse.W007"}
"""Checks of the jobs this test process has registered, whichever earlier
tests in it did (a task found by its path, say), not of the page's settings."""


def check_settings(values: dict) -> None:
    if "INSTALLED_APPS" in values:
        assert "django_workhorse" in values["INSTALLED_APPS"]
    if "DATABASES" in values:
        assert values["DATABASES"]["default"]["ENGINE"] == "django.db.backends.postgresql"
    if "WORKHORSE" in values:
        assert problems({**DEFAULTS, **values["WORKHORSE"]}) == []
    for plugin in values.get("pytest_plugins", []):
        __import__(plugin)
    if "TASKS" in values:
        with override_settings(TASKS=values["TASKS"]):
            found = [
                m
                for m in run_checks()
                if m.id.startswith("workhorse.") and m.id not in WHERE_JOBS_ARE_FOUND
            ]
        assert found == []


@pytest.mark.parametrize("page", PAGES)
def test_every_python_example_of_the_page_runs(page, db):
    name = "docs_" + page.removesuffix(".md").replace("-", "_")
    module = types.ModuleType(name)
    sys.modules[name] = module
    overrides = []
    try:
        for code in blocks(page, "python"):
            if django.VERSION < (6, 0):
                code = code.replace("from django.tasks import", "from django_tasks import")
            if is_settings(code) or code.lstrip().startswith("pytest_plugins"):
                values: dict = {}
                exec(compile(code, f"{page} (settings)", "exec"), values)
                check_settings(values)
                if "TASKS" in values:
                    override = override_settings(TASKS=values["TASKS"])
                    override.enable()
                    overrides.append(override)
                continue
            if code.startswith(WORKER_RAN_BEFORE.get(page, "\0")):
                from django_workhorse.testing import run_jobs

                run_jobs()
            exec(compile(code, page, "exec"), module.__dict__)
        for attr, value in list(vars(module).items()):
            if page in PYTEST_PAGES:
                break  # run by test_the_test_examples_of_the_page_pass_under_pytest
            if attr.startswith("test_") and inspect.isfunction(value):
                params = inspect.signature(value).parameters
                marks = [m.name for m in getattr(value, "pytestmark", [])]
                assert "django_db" in marks or {"db", "transactional_db"} & set(params), (
                    f"{page}: {attr} would be refused the database under pytest-django"
                )
                value(**({"workhorse_jobs": WorkhorseJobs()} if "workhorse_jobs" in params else {}))
    finally:
        for override in reversed(overrides):
            override.disable()
        del sys.modules[name]


def defined_tests(code: str) -> list[str]:
    return [
        node.name
        for node in ast.parse(code).body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    ]


@pytest.mark.parametrize("page", PYTEST_PAGES)
@pytest.mark.django_db(transaction=True)
def test_the_test_examples_of_the_page_pass_under_pytest(page, tmp_path):
    from django.contrib.contenttypes.models import ContentType

    from django_workhorse.models import Job

    conftest, module = [], []
    for code in blocks(page, "python"):
        if django.VERSION < (6, 0):
            code = code.replace("from django.tasks import", "from django_tasks import")
        if code.lstrip().startswith("pytest_plugins"):
            conftest.append(code)
        else:
            assert not is_settings(code), f"{page}: a settings block has no place in a test run"
            module.append(code)
    tests = [name for code in module for name in defined_tests(code)]
    assert tests, f"{page} defines no test function"
    # The file the page says its examples go in, with its packages.
    found = TEST_FILE_RE.search((DOCS / page).read_text())
    assert found, f"{page} does not say which file its examples go in"
    name = found.group(1)
    packages = {
        "/".join(name.split("/")[:depth]) + "/__init__.py": ""
        for depth in range(1, name.count("/") + 1)
    }
    run = run_pytest(
        tmp_path,
        {"conftest.py": "\n".join(conftest), **packages, name: "\n\n".join(module)},
        "-v",
    )
    # The page's transactional tests flushed Django's tables and made the
    # content types again, under new ids.
    ContentType.objects.clear_cache()
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"collected {len(tests)} items" in run.stdout, run.stdout
    for test in tests:
        assert f"{name}::{test} PASSED" in run.stdout, run.stdout
    for toml in blocks(page, "toml"):  # the settings pytest-django reads, as the page gives them
        import tomllib

        options = tomllib.loads(toml)["tool"]["pytest"]["ini_options"]
        assert set(options) == {"DJANGO_SETTINGS_MODULE"}, options
    # The db tests were rolled back; the fixture deleted what the others left.
    assert not Job.objects.exists()


@pytest.mark.parametrize("page", COMMAND_PAGES)
def test_every_command_of_the_page_parses(page):
    commands = get_commands()
    for code in blocks(page, "console"):
        for line in code.strip().splitlines():
            words = shlex.split(line)
            if words[:2] == ["pip", "install"] or tuple(words[:2]) in SHELL_COMMANDS:
                continue
            if tuple(words[:1]) in SHELL_COMMANDS:
                continue
            assert words[:2] == ["python", "manage.py"], line
            command = load_command_class(commands[words[2]], words[2])
            command.create_parser("manage.py", words[2]).parse_args(words[3:])


EXTRA_RE = re.compile(r"django-workhorse\[([a-z0-9_,-]+)\]")


def test_every_extra_the_docs_name_is_one_the_package_declares():
    import tomllib

    root = DOCS.parent
    declared = set(
        tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    pages = [root / "README.md", *sorted(DOCS.glob("*.md"))]
    named = {
        (page.name, extra)
        for page in pages
        for group in EXTRA_RE.findall(page.read_text())
        for extra in group.split(",")
    }
    assert named, "no page names an extra"
    assert {(page, extra) for page, extra in named if extra not in declared} == set()


RUN_AS_PASTED = {
    "getting-started.md": {"python", "console"},
    "testing.md": {"python", "console", "toml"},
    "scaling.md": {"ini", "python"},
    "upgrading.md": {"console"},
}
"""Pages every code block of which a test runs, and the kinds of block
their tests run: ``python`` and ``console`` here and in
tests/docs/test_getting_started_runs.py, testing.md's ``python`` under
pytest in the file the page names and its ``toml`` read as pytest-django
reads it, scaling.md's ``ini`` in a real PgBouncer and its settings merged
(tests/docs/test_scaling_doc.py). A block of another kind is one no test
runs."""


def fenced_blocks(page: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced block of the page, unlabeled ones too."""
    found, language, code, inside = [], "", [], False
    for line in (DOCS / page).read_text().splitlines():
        if line.startswith("```") and not inside:
            language, code, inside = line[3:].strip(), [], True
        elif line.startswith("```"):
            found.append((language, "\n".join(code)))
            inside = False
        elif inside:
            code.append(line)
    return found


@pytest.mark.parametrize("page", sorted(RUN_AS_PASTED))
def test_every_code_block_of_the_page_is_of_a_kind_its_tests_run(page):
    for language, code in fenced_blocks(page):
        if not language:
            assert "│" in code or "▶" in code, f"{page}: an unlabeled block that is no diagram"
            continue
        assert language in RUN_AS_PASTED[page], f"{page}: no test runs its {language} block"
    # The tests of this module that run those kinds (scaling.md's python: its own test).
    if "python" in RUN_AS_PASTED[page] and page != "scaling.md":
        assert page in PAGES
    if "console" in RUN_AS_PASTED[page]:
        assert page in COMMAND_PAGES
