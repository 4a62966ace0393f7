"""docs/scaling.md as pasted: its ``pgbouncer.ini`` loads in Debian's real
PgBouncer and passes connections through, with only what the page says to
adjust adjusted (the ``[databases]`` line, ``listen_port``, ``auth_file``);
its settings snippet, pasted below a project's own ``WORKHORSE`` dict, keeps
that dict's keys, adds ``LISTEN_DATABASE`` and points ``default`` at that
PgBouncer and ``default_direct`` at PostgreSQL."""

from __future__ import annotations

import os
import pwd
import re
import socket
import subprocess
import time
import warnings

import psycopg
import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.test import override_settings

from django_workhorse.core.conf import DEFAULTS, problems
from tests.docs.test_doc_examples import blocks

PAGE = "scaling.md"
PASSWORD = "secret"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def adjusted(ini: str, server: dict, port: int, auth_file: str) -> str:
    """The page's ini with what the page says to adjust changed, and nothing else."""
    lines = []
    for line in ini.splitlines():
        if line.startswith("app = "):
            line = f"app = host={server['HOST']} port={server['PORT']} dbname={server['NAME']}"
        elif line.startswith("listen_port ="):
            line = f"listen_port = {port}"
        elif line.startswith("auth_file ="):
            line = f"auth_file = {auth_file}"
        lines.append(line)
    return "\n".join(lines) + "\n"


@pytest.fixture
def pasted_pgbouncer(db, tmp_path):
    """Debian's pgbouncer started with the page's ini (adjusted); its port."""
    (ini,) = blocks(PAGE, "ini")
    server = connection.settings_dict
    user = server["USER"] or "postgres"
    port = free_port()
    os.chmod(tmp_path, 0o755)
    auth_file = tmp_path / "userlist.txt"
    auth_file.write_text(f'"{user}" "{PASSWORD}"\n')
    config = tmp_path / "pgbouncer.ini"
    config.write_text(
        adjusted(ini, {**server, "HOST": server["HOST"] or "127.0.0.1"}, port, str(auth_file))
    )
    run_as = ["-u", "nobody"] if os.getuid() == 0 else []  # pgbouncer refuses root
    if run_as:
        nobody = pwd.getpwnam("nobody")
        for path in (auth_file, config):
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
    process = subprocess.Popen(
        ["/usr/sbin/pgbouncer", *run_as, str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 15
    try:
        while True:
            assert process.poll() is None, f"pgbouncer stopped at start:\n{process.stdout.read()}"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert time.monotonic() < deadline, "pgbouncer did not listen within 15 s"
                time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stdout.close()


def test_the_pgbouncer_ini_loads_and_passes_connections_to_the_database(pasted_pgbouncer):
    server = connection.settings_dict
    with psycopg.connect(
        host="127.0.0.1",
        port=pasted_pgbouncer,
        dbname="app",
        user=server["USER"] or "postgres",
        password=PASSWORD,
        prepare_threshold=None,
    ) as conn:
        (name,) = conn.execute("SELECT current_database()").fetchone()

    assert name == server["NAME"]


def test_the_ini_has_no_end_of_line_comments():
    (ini,) = blocks(PAGE, "ini")

    assert [line for line in ini.splitlines() if re.search(r"\S\s*[;#]", line)] == []


def test_the_settings_snippet_merges_into_the_projects_workhorse_dict(
    pasted_pgbouncer, monkeypatch
):
    server = connection.settings_dict
    user = server["USER"] or "postgres"
    monkeypatch.setenv(
        "DATABASE_URL", f"postgres://{user}:{PASSWORD}@127.0.0.1:{pasted_pgbouncer}/app"
    )
    monkeypatch.setenv(
        "DIRECT_DATABASE_URL",
        f"postgres://{user}@{server['HOST'] or '127.0.0.1'}:{server['PORT']}/{server['NAME']}",
    )
    (snippet,) = blocks(PAGE, "python")
    settings = {"WORKHORSE": {"QUEUES": {"email": {"concurrency": 4}}, "CONCURRENCY": 8}}

    exec(compile(snippet, PAGE, "exec"), settings)

    assert settings["WORKHORSE"] == {
        "QUEUES": {"email": {"concurrency": 4}},
        "CONCURRENCY": 8,
        "LISTEN_DATABASE": "default_direct",
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Django's "overriding DATABASES" warning
        with override_settings(DATABASES={**django_settings.DATABASES, **settings["DATABASES"]}):
            assert problems({**DEFAULTS, **settings["WORKHORSE"]}) == []
    pooled, direct = settings["DATABASES"]["default"], settings["DATABASES"]["default_direct"]
    assert pooled["DISABLE_SERVER_SIDE_CURSORS"] is True
    for alias, expected_port in ((pooled, pasted_pgbouncer), (direct, int(server["PORT"]))):
        with psycopg.connect(
            host=alias["HOST"],
            port=alias["PORT"],
            dbname=alias["NAME"],
            user=alias["USER"],
            password=alias["PASSWORD"] or None,
            prepare_threshold=None,
        ) as conn:
            (name,) = conn.execute("SELECT current_database()").fetchone()
        assert name == server["NAME"]
        assert int(alias["PORT"]) == expected_port
