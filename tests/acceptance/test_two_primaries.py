"""Two primaries: two PostgreSQL servers as two Django aliases (stores).

The test starts a second server of its own (the embedded one that
``scripts/with_database.py`` uses) and gives the test project the alias
``second`` through ``DATABASE_URL_SECOND``. A producer process enqueues jobs
of both bindings with plain ``enqueue_many`` calls; one ``runworker`` serves
each store (``--database second`` for the second); every job ends on its own
store, and ``workhorse_status`` lists both.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from tests.acceptance.conftest import TESTPROJECT, database_url

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

JOBS = 40
ON_DEFAULT = "demo.jobs.add"
ON_SECOND = "jobtests.second_store.on_second"


def load_embedded_server():
    path = Path(__file__).resolve().parents[2] / "scripts" / "with_database.py"
    spec = importlib.util.spec_from_file_location("with_database", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EmbeddedServer


def manage(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``manage.py *argv`` of the test project against both stores."""
    done = subprocess.run(
        [sys.executable, "manage.py", *argv],
        cwd=TESTPROJECT,
        env={
            **os.environ,
            "PYTHONPATH": str(TESTPROJECT.parent),
            "DJANGO_SETTINGS_MODULE": "testproject.settings",
            "DATABASE_URL": database_url(),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"manage.py {' '.join(argv)}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def second_server():
    """A second PostgreSQL server with its database: its URL."""
    server = load_embedded_server()()
    try:
        url = server.start()
        with psycopg.connect(url, dbname="postgres", autocommit=True) as conn:
            conn.execute("CREATE DATABASE workhorse")
        yield url
    finally:
        server.stop()


@pytest.fixture
def second_url(second_server):
    """The second server, migrated, emptied again after the test."""
    manage("migrate", "--database", "second", "-v", "0", env={"DATABASE_URL_SECOND": second_server})
    yield second_server
    with psycopg.connect(second_server, autocommit=True) as conn:
        conn.execute(
            "TRUNCATE workhorse_job, workhorse_job_runtime, workhorse_job_outcome,"
            " workhorse_job_event, workhorse_attempt_history, workhorse_job_query,"
            " workhorse_queue CASCADE"
        )


def outcomes(cursor) -> list[tuple[str, str, int]]:
    """(job name, outcome state, jobs) of a store, and ('runtime', state, n) for live rows."""
    cursor.execute(
        "SELECT j.name, o.state, count(*) FROM workhorse_job j"
        " JOIN workhorse_job_outcome o ON o.job_id = j.id GROUP BY 1, 2"
        " UNION ALL SELECT 'runtime', r.state, count(*) FROM workhorse_job_runtime r GROUP BY 2"
        " ORDER BY 1, 2"
    )
    return [tuple(row) for row in cursor.fetchall()]


def attempt_workers(cursor) -> set[str]:
    cursor.execute("SELECT DISTINCT worker_id FROM workhorse_attempt_history")
    return {row[0] for row in cursor.fetchall()}


def test_jobs_bound_to_two_primaries_run_on_their_own_store(second_url, start_worker, wait_until):
    env = {"DATABASE_URL_SECOND": second_url}
    manage(
        "shell",
        "-c",
        "from demo.jobs import add; from jobtests.second_store import on_second; "
        f"add.enqueue_many([{{'a': i, 'b': 1}} for i in range({JOBS})]); "
        f"on_second.enqueue_many([{{'n': i}} for i in range({JOBS})])",
        env=env,
    )
    first = start_worker("--queues", "default", env=env, name="first")
    second = start_worker("--database", "second", env=env, name="second")

    def done() -> bool:
        with connection.cursor() as cursor, psycopg.connect(second_url) as other:
            return outcomes(cursor) == [(ON_DEFAULT, "succeeded", JOBS)] and outcomes(
                other.cursor()
            ) == [(ON_SECOND, "succeeded", JOBS)]

    wait_until(done, timeout=60, what="every job succeeded on its own store")
    with connection.cursor() as cursor, psycopg.connect(second_url) as other:
        assert attempt_workers(cursor) == {first.worker_id}
        assert attempt_workers(other.cursor()) == {second.worker_id}

    status = json.loads(manage("workhorse_status", "--json", env=env).stdout)
    assert list(status["stores"]) == ["default", "second"]
    by_queue = {
        alias: {q["queue"]: q["succeeded"] for q in data["queues"]}
        for alias, data in status["stores"].items()
    }
    assert (
        by_queue["default"].get("default") == JOBS and "jobtests.second" not in by_queue["default"]
    )
    assert by_queue["second"] == {"jobtests.second": JOBS}
    text = manage("workhorse_status", env=env).stdout
    assert "== store default" in text and "== store second" in text
    alone = json.loads(manage("workhorse_status", "--json", "--database", "second", env=env).stdout)
    assert [(q["queue"], q["succeeded"]) for q in alone["queues"]] == [("jobtests.second", JOBS)]

    assert first.stop() == 0
    assert second.stop() == 0
