"""docs/getting-started.md, run as written by a new user: a virtualenv of its
own (no site packages), the package installed from a copy of this checkout
by pip, ``django-admin startproject``, a new PostgreSQL database, ``migrate``,
the page's job in ``myapp/jobs.py``, its enqueue, and ``runworker --burst``
running the job, then the page's own assertions on the handle.

The page is walked block by block. What this test adds: the database name is
made unique (``mysite`` may exist), the server is reached through libpq's
``PGHOST``/``PGPORT``/``PGUSER`` (as the page says), and the worker that runs
forever (``runworker`` without ``--burst``) is skipped. Python blocks after
the job's run in one process, in page order, with the console lines between
them run as subprocesses, so the handle of the enqueue block is the one the
last blocks refresh.

Building the virtualenv takes most of the test's minute; it is made once per
test session (``fresh_venv``)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

from tests.docs.fresh_project import checkout_copy, database_server_env
from tests.docs.test_doc_examples import BLOCK_RE, DOCS, is_settings

pytestmark = pytest.mark.fresh_venv

CHECKOUT = DOCS.parent

DRIVER = """
import json, os, shlex, subprocess, sys

import django

django.setup()
namespace = {}
exec("from myapp.jobs import *", namespace)
for kind, text in json.load(open(sys.argv[1])):
    if kind == "python":
        exec(compile(text, "getting-started.md", "exec"), namespace)
        continue
    argv = shlex.split(text)
    if argv[0] == "python":
        argv[0] = sys.executable
    done = subprocess.run(argv, capture_output=True, text=True)
    print(f"$ {text} -> {done.returncode}", done.stdout, done.stderr, sep="\\n", flush=True)
    if done.returncode:
        sys.exit(f"{text!r} exited with {done.returncode}")
print("PAGE DONE")
"""


def page_blocks() -> list[tuple[str, str]]:
    text = (DOCS / "getting-started.md").read_text()
    return [(lang, code) for lang, code in BLOCK_RE.findall(text) if lang in ("python", "console")]


@pytest.fixture(scope="session")
def fresh_venv(tmp_path_factory) -> Path:
    """A folder holding ``venv/`` (no packages but pip's) and a copy of the
    checkout as ``django-workhorse/``, as the page's install line expects."""
    root = tmp_path_factory.mktemp("getting-started")
    checkout_copy(root / "django-workhorse")
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True)
    return root


@pytest.fixture
def server_env() -> dict[str, str]:
    return database_server_env()


def test_getting_started_runs_as_written(fresh_venv, server_env, tmp_path):
    venv_bin = fresh_venv / "venv" / "bin"
    database = f"mysite_{uuid.uuid4().hex[:8]}"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTHON"))},
        **server_env,
        "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(fresh_venv / "venv"),
    }
    cwd = fresh_venv
    later: list[tuple[str, str]] = []  # what runs in one process, after the job exists

    def run(line: str) -> None:
        argv = shlex.split(
            line.replace("mysite", database) if line.startswith("createdb") else line
        )
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"$ {line}\n{done.stdout}\n{done.stderr}"

    try:
        for lang, code in page_blocks():
            if later or (lang == "python" and "@workhorse.job" in code):
                if lang == "python" and "@workhorse.job" in code and not later:
                    (cwd / "myapp" / "jobs.py").write_text(code)
                    later.append(("python", "pass"))
                    continue
                for line in code.strip().splitlines() if lang == "console" else [code]:
                    if lang == "console" and "runworker" in line and "--burst" not in line:
                        continue  # a worker that runs until stopped
                    later.append((lang, line))
                continue
            if lang == "python":
                assert is_settings(code), code
                settings = cwd / "mysite" / "settings.py"
                named = re.sub(r'"NAME": "mysite"', f'"NAME": "{database}"', code)
                settings.write_text(settings.read_text() + "\n" + named)
                continue
            for line in code.strip().splitlines():
                if line.startswith("cd "):
                    cwd = cwd / line.split()[1]
                    continue
                run(line)

        steps = tmp_path / "steps.json"
        steps.write_text(json.dumps(later))
        (cwd / "run_page.py").write_text(DRIVER)
        done = subprocess.run(
            [str(venv_bin / "python"), "run_page.py", str(steps)],
            cwd=cwd,
            env={**env, "DJANGO_SETTINGS_MODULE": "mysite.settings"},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "PAGE DONE" in done.stdout
        assert "$ python manage.py runworker --burst -> 0" in done.stdout
        installed = subprocess.run(
            [
                str(venv_bin / "python"),
                "-c",
                "import django_workhorse; print(django_workhorse.__file__)",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert str(CHECKOUT) not in installed  # the venv's own copy, not this checkout
    finally:
        admin = " ".join(f"{k.lower()[2:]}={v}" for k, v in server_env.items()) + " dbname=postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
