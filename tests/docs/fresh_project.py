"""What the tests that install django-workhorse like a user share: a copy of
the checkout, a virtualenv of its own outside the checkout, libpq's
environment for the test server, and a database of its own on it.

Used by tests/docs/test_getting_started_runs.py (getting-started.md) and
tests/docs/test_install_like_a_user.py (the wheel, and the README's first
section)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg

CHECKOUT = Path(__file__).resolve().parents[2]

SKIPPED_DIRS = (".git", ".venv*", "*.egg-info", "build", "dist", "__pycache__", ".*_cache")
"""Left out of the copy when the checkout is not a git work tree."""


def checkout_copy(target: Path) -> Path:
    """The checkout's files as git sees them (tracked, and new ones not
    ignored); without git, the tree but for virtualenvs, builds and caches."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=CHECKOUT,
            capture_output=True,
            check=True,
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        shutil.copytree(CHECKOUT, target, ignore=shutil.ignore_patterns(*SKIPPED_DIRS))
        return target
    for name in filter(None, listed.split("\0")):
        source = CHECKOUT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def package_files() -> list[str]:
    """The files of the ``django_workhorse`` package in this checkout, as
    paths relative to the checkout (what a wheel must carry)."""
    root = CHECKOUT / "django_workhorse"
    return sorted(
        str(path.relative_to(CHECKOUT))
        for path in root.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    )


def make_venv(path: Path) -> Path:
    """A virtualenv at ``path`` with nothing but pip; its ``bin`` folder."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / "bin"


def database_server_env() -> dict[str, str]:
    """libpq's variables for the server the tests run on."""
    from django.db import connection

    s = connection.settings_dict
    env = {
        "PGHOST": s.get("HOST") or "127.0.0.1",
        "PGPORT": str(s.get("PORT") or 5432),
        "PGUSER": s.get("USER") or "postgres",
    }
    if s.get("PASSWORD"):
        env["PGPASSWORD"] = s["PASSWORD"]
    return env


def venv_env(venv_bin: Path, server_env: dict[str, str]) -> dict[str, str]:
    """The environment of a shell with the virtualenv activated: no Django
    settings or Python paths of this test run leak in."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTHON"))},
        **server_env,
        "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(venv_bin.parent),
    }


def new_database_name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def create_database(server_env: dict[str, str], name: str) -> None:
    with psycopg.connect(_admin_dsn(server_env), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(server_env: dict[str, str], name: str) -> None:
    with psycopg.connect(_admin_dsn(server_env), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _admin_dsn(server_env: dict[str, str]) -> str:
    return " ".join(f"{k.lower()[2:]}={v}" for k, v in server_env.items()) + " dbname=postgres"
