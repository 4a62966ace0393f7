"""What the tests that install django-workhorse like a user share: a copy of
the checkout, a virtualenv of its own outside the checkout, libpq's
environment for the test server, and a database of its own on it.

Used by tests/docs/test_getting_started_runs.py (getting-started.md),
tests/docs/test_install_like_a_user.py (the wheel, and the README's first
section) and tests/acceptance/test_upgrade_with_workers_running.py (the
released package, built from its git tag)."""

from __future__ import annotations

import fcntl
import io
import os
import shutil
import subprocess
import sys
import tarfile
import uuid
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

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


def made_once(
    tmp_path_factory: pytest.TempPathFactory,
    worker_id: str,
    name: str,
    make: Callable[[Path], None],
) -> Path:
    """The folder ``name``, filled by ``make(folder)`` once for every test
    process of this run: pytest-xdist's processes share their parent's
    temporary folder, and take turns under a lock there."""
    base = tmp_path_factory.getbasetemp()
    shared = (base if worker_id == "master" else base.parent) / name
    shared.mkdir(exist_ok=True)
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / "done").exists():
            make(shared)
            (shared / "done").touch()
    return shared


def build(source: Path, outdir: Path, *flags: str) -> None:
    """``python -m build *flags`` of the project in ``source`` into ``outdir``."""
    done = subprocess.run(
        [sys.executable, "-m", "build", *flags, "--outdir", str(outdir)],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def released_commit(version: str) -> str:
    """The commit of release ``version``: its tag ``v<version>``, or, in a
    clone without tags, the commit whose subject is ``Release <version>``.
    Fails the test, saying how to fetch the tags, when there is neither."""

    def git(*argv: str) -> str:
        done = subprocess.run(["git", *argv], cwd=CHECKOUT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--verify", "--quiet", f"v{version}^{{commit}}") or git(
        "log", "--format=%H", f"--grep=^Release {version}$", "-1"
    )
    if not commit:
        pytest.fail(
            f"release {version} not found in {CHECKOUT}: neither a tag v{version} nor a"
            f" commit 'Release {version}'. Fetch the tags (`git fetch --tags origin`), or"
            " clone with its history (`git fetch --unshallow --tags` in a shallow clone)",
            pytrace=False,
        )
    return commit


def export_commit(commit: str, target: Path) -> Path:
    """The files of ``commit`` (``git archive``) in the folder ``target``."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit], cwd=CHECKOUT, capture_output=True, check=True
    ).stdout
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target


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


def database_dsn(server_env: dict[str, str], name: str) -> str:
    """libpq's connection string for database ``name`` on the server."""
    return " ".join(f"{k.lower()[2:]}={v}" for k, v in server_env.items()) + f" dbname={name}"


def _admin_dsn(server_env: dict[str, str]) -> str:
    return database_dsn(server_env, "postgres")
