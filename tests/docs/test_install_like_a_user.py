"""django-workhorse installed the way a user installs it, outside this checkout.

The wheel and the sdist ``python -m build`` makes from a copy of the
checkout carry every file of the package (its .sql files and templates
above all: a migration or an admin page without them fails only once
installed) and pass ``twine check``. The wheel, installed in a virtualenv
of its own (no site packages, in a temporary folder), runs the project of
the README's first section: ``django-admin startproject``, the app added,
a new PostgreSQL database, ``migrate``, a job in an app's ``jobs.py``
enqueued by a view in its transaction, ``runworker --burst`` running it,
and the admin's job list showing it. The README's first section also runs
as written, its ``pip install`` line included, from a copy of the checkout.

What the tests add to the README, which starts from a project you have:
``startproject mysite`` and ``startapp myapp`` first, the database name
made unique (``mysite`` may exist) and created, the server reached through
libpq's ``PGHOST``/``PGPORT``/``PGUSER``, and a sign-up posted to the
README's view (Django's ``RequestFactory``) between ``migrate`` and the
worker.

The build is made once per test run (shared by the pytest-xdist processes
through a lock), each virtualenv once per test."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import psycopg
import pytest

from tests.docs.fresh_project import (
    CHECKOUT,
    build,
    checkout_copy,
    create_database,
    database_server_env,
    drop_database,
    made_once,
    make_venv,
    new_database_name,
    package_files,
    venv_env,
)
from tests.docs.test_doc_examples import BLOCK_RE

pytestmark = pytest.mark.fresh_venv

README = CHECKOUT / "README.md"

SIGN_UP = """
from django.test import RequestFactory

from myapp.views import sign_up

request = RequestFactory().post("/sign-up", {"username": "ada", "email": "ada@example.com"})
print(sign_up(request).content.decode())
"""
"""Run by ``manage.py shell`` before the worker: a sign-up through the README's view."""

ADMIN_JOB_LIST = """
from django.contrib.auth.models import User
from django.test import Client
from django.test.utils import setup_test_environment

setup_test_environment()
client = Client()
client.force_login(User.objects.create_superuser("admin", "admin@example.com", "-"))
page = client.get("/admin/django_workhorse/job/")
assert page.status_code == 200, page.status_code
print(page.content.decode())
"""
"""Run by ``manage.py shell`` after the worker: the admin's job list, as a superuser."""


@pytest.fixture(scope="session")
def built(tmp_path_factory, worker_id) -> Path:
    """A folder with ``django-workhorse/`` (a copy of the checkout) and
    ``dist/`` (its sdist and wheel), built once for every test process
    of this run."""

    def make(shared: Path) -> None:
        build(checkout_copy(shared / "django-workhorse"), shared / "dist")

    return made_once(tmp_path_factory, worker_id, "built-package", make)


def the_wheel(built: Path) -> Path:
    [wheel] = (built / "dist").glob("*.whl")
    return wheel


def readme_blocks() -> list[tuple[str, str]]:
    """The ```python and ```console blocks of the README's first section."""
    text = README.read_text()
    section = text[
        text.index("## Use it in your project") : text.index("## Develop django-workhorse")
    ]
    return BLOCK_RE.findall(section)


def test_the_wheel_and_the_sdist_carry_every_file_of_the_package(built):
    expected = package_files()
    assert any(name.endswith(".sql") for name in expected)
    assert any("/templates/" in name for name in expected)
    [sdist] = (built / "dist").glob("*.tar.gz")

    with zipfile.ZipFile(the_wheel(built)) as wheel:
        in_wheel = set(wheel.namelist())
    with tarfile.open(sdist) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}

    assert [name for name in expected if name not in in_wheel] == []
    assert [name for name in expected if name not in in_sdist] == []
    assert "LICENSE" in in_sdist


def test_twine_check_passes_on_the_wheel_and_the_sdist(built):
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, (built / "dist").iterdir())],
        capture_output=True,
        text=True,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_the_wheel_installed_outside_the_checkout_runs_the_readme_project(built, tmp_path):
    run_readme_project(tmp_path, install=["pip", "install", str(the_wheel(built))])


def test_the_readmes_first_section_runs_as_written(built, tmp_path):
    checkout_copy(tmp_path / "django-workhorse")
    run_readme_project(tmp_path, install=None)


def run_readme_project(root: Path, install: list[str] | None) -> None:
    """The README's first section in a new virtualenv under ``root``, where
    ``./django-workhorse`` is a copy of the checkout. ``install`` replaces
    the README's ``pip install`` line (None runs it as written)."""
    server_env = database_server_env()
    venv_bin = make_venv(root / "venv")
    env = venv_env(venv_bin, server_env)
    database = new_database_name("readme")
    project = root / "mysite"
    said: list[str] = []

    def run(argv: list[str], cwd: Path) -> str:
        if argv[0] == "python":
            argv = [str(venv_bin / "python"), *argv[1:]]
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"$ {shlex.join(argv)}\n{done.stdout}\n{done.stderr}"
        said.append(done.stdout + done.stderr)
        return done.stdout

    create_database(server_env, database)
    try:
        for lang, code in readme_blocks():
            if lang == "python":
                first, _, body = code.partition("\n")
                path = first.removeprefix("# ").split(":")[0].strip()
                assert path.endswith(".py"), f"a README block that names no file: {code}"
                if path.endswith("settings.py"):
                    body = body.replace('"NAME": "mysite"', f'"NAME": "{database}"')
                    settings = project / path
                    settings.write_text(settings.read_text() + "\n" + body)
                else:
                    (project / path).write_text(code)
                continue
            for line in code.strip().splitlines():
                argv = shlex.split(line.split("#")[0])
                if argv[:2] == ["pip", "install"]:
                    run(install or argv, root)
                    run(["django-admin", "startproject", "mysite"], root)
                    run(["python", "manage.py", "startapp", "myapp"], project)
                    continue
                if "runworker" in argv:
                    assert "--burst" in argv, line
                    welcome = run(["python", "manage.py", "shell", "-c", SIGN_UP], project)
                    assert "welcome" in welcome
                run(argv, project)

        installed = run(
            ["python", "-c", "import django_workhorse; print(django_workhorse.__file__)"], root
        )
        assert str(CHECKOUT) not in installed  # the virtualenv's own copy
        assert str(root / "venv") in installed
        with psycopg.connect(
            " ".join(f"{k.lower()[2:]}={v}" for k, v in server_env.items()) + f" dbname={database}"
        ) as conn:
            [(name, state, result)] = conn.execute(
                "SELECT j.name, o.state, o.result FROM workhorse_job j"
                " JOIN workhorse_job_outcome o ON o.job_id = j.id"
            ).fetchall()
        assert (name, state) == ("myapp.jobs.send_welcome", "succeeded"), said
        assert result == "welcome mail sent to ada@example.com"
        page = run(["python", "manage.py", "shell", "-c", ADMIN_JOB_LIST], project)
        assert re.search(r"myapp\.jobs\.send_welcome", page), page[-2000:]
    finally:
        drop_database(server_env, database)
