"""Fixtures shared by every test directory.

The workhorse models are unmanaged (the SQL files create the tables), so
Django's flush after a ``transaction=True`` test leaves their rows behind;
``_empty_workhorse_tables`` empties them after each such test instead.
``workhorse_schema`` is left alone: it holds the installed schema version.

Transactional tests that need no other app's tables say so with
``available_apps=["django_workhorse"]``: Django's flush then has nothing to
truncate, which saves about a second per test.

The tests marked ``fresh_venv`` or ``soak`` are collected first (the
longest, ``LONGEST_FIRST``).

Users are made with a password by the admin and browser tests:
``_fast_password_hashing`` makes that cheap for the session (Django's own
hasher spends about half a second on each, on purpose).

``pgbouncer`` is one real PgBouncer (transaction mode, a pool of
``PGBOUNCER_POOL_SIZE``) in front of the test database for the session.
With ``WORKHORSE_TEST_PGBOUNCER=1`` (``make test``'s second run, over
``PGBOUNCER_TESTS``) the whole run goes through it: the tests' own Django
connection, and every worker the acceptance tests start, whose wake-ups come
through ``DATABASES['direct']`` (``WORKHORSE['LISTEN_DATABASE']``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from django.test.signals import setting_changed

from tests.helpers import (
    DIRECT,
    PGBOUNCER_POOL_SIZE,
    POOLED,
    WORKHORSE_TABLES,
    delete_workhorse_rows,
    poll_until,
    side_alias,
    start_pgbouncer,
)

LONGEST_FIRST = ("fresh_venv", "soak")
"""Markers of the longest tests (10 to 30 s each): they run first, so that
under pytest-xdist none of them is left to run alone at the end."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not any(item.get_closest_marker(m) for m in LONGEST_FIRST))


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hashing() -> Iterator[None]:
    """MD5 for the passwords of the test users (the admin's operator and
    viewer, the browser tests' log-ins): PBKDF2's iterations cost each
    user about 0.4 s, 100 s in all. No test here is about password storage.

    Set on the settings themselves, not with ``override_settings``: under
    that, ``settings.SETTINGS_MODULE`` reads None for the whole session."""
    from django.conf import settings

    def use(hashers: list[str], enter: bool) -> None:
        settings.PASSWORD_HASHERS = hashers
        setting_changed.send(
            sender=type(settings), setting="PASSWORD_HASHERS", value=hashers, enter=enter
        )

    saved = list(settings.PASSWORD_HASHERS)
    use(["django.contrib.auth.hashers.MD5PasswordHasher"], enter=True)
    yield
    use(saved, enter=False)


@pytest.fixture(scope="session")
def pgbouncer(django_db_setup: None, django_db_blocker: Any) -> Iterator[Any]:
    """One PgBouncer (transaction mode) in front of the test database, for
    the session (``scripts/pgbouncer.py``); fails naming how to install it."""
    from tests.acceptance.conftest import database_url

    with django_db_blocker.unblock():
        url = database_url()
    with start_pgbouncer(url, pool_size=PGBOUNCER_POOL_SIZE) as bouncer:
        yield bouncer


@pytest.fixture(scope="session", autouse=True)
def _through_pgbouncer(request: pytest.FixtureRequest) -> Iterator[Any]:
    """In a pooled run, Django's connection goes through ``pgbouncer``."""
    if not POOLED:
        yield None
        return
    bouncer = request.getfixturevalue("pgbouncer")
    from django.db import connections

    conn = connections["default"]
    saved = dict(conn.settings_dict)
    DIRECT.update(saved)
    conn.close()
    # Server-side cursors live in a session: Django's advice for transaction pooling.
    conn.settings_dict.update(
        HOST="127.0.0.1", PORT=str(bouncer.port), DISABLE_SERVER_SIDE_CURSORS=True
    )
    try:
        yield bouncer
    finally:
        conn.close()
        conn.settings_dict.update(saved)
        DIRECT.clear()


def _is_transactional(request: pytest.FixtureRequest) -> bool:
    marker = request.node.get_closest_marker("django_db")
    if marker is not None and marker.kwargs.get("transaction"):
        return True
    return "transactional_db" in request.fixturenames or "live_server" in request.fixturenames


@pytest.fixture(autouse=True)
def _empty_workhorse_tables(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if not _is_transactional(request):
        return
    from django.db import connection

    with request.getfixturevalue("django_db_blocker").unblock(), connection.cursor() as cursor:
        delete_workhorse_rows(cursor)


@pytest.fixture(scope="session")
def committed_rows(django_db_setup, django_db_blocker) -> Callable[[], Any]:
    """A context manager for module-scoped fixtures that commit rows once.

    ``with committed_rows() as cursor:`` gives an autocommit cursor; every
    workhorse row is deleted when the block exits.
    """
    from django.db import connection

    @contextlib.contextmanager
    def session() -> Iterator[Any]:
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            try:
                yield cursor
            finally:
                delete_workhorse_rows(cursor)

    return session


@pytest.fixture
def cursor(db) -> Iterator[Any]:
    """A cursor of Django's default connection (inside the test's transaction, if any)."""
    from django.db import connection

    with connection.cursor() as cur:
        yield cur


@pytest.fixture
def pg_connect(transactional_db) -> Iterator[Callable[..., psycopg.Connection]]:
    """Open autocommit psycopg connections to the test database, closed at teardown.

    Each one is a separate session, like a worker's: what it sees is what
    other sessions have committed.
    """
    from django.db import connection

    params = connection.get_connection_params()
    kwargs = {k: params[k] for k in ("dbname", "user", "password", "host", "port") if k in params}
    opened: list[psycopg.Connection] = []

    def connect() -> psycopg.Connection:
        conn = psycopg.connect(**kwargs, autocommit=True)
        opened.append(conn)
        return conn

    yield connect
    for conn in opened:
        conn.close()


@pytest.fixture
def wait_until() -> Callable[..., Any]:
    """``wait_until(predicate, timeout=5)``: poll with a deadline instead of sleeping."""

    def wait(predicate: Callable[[], Any], *, timeout: float = 5.0, interval: float = 0.01) -> Any:
        return poll_until(predicate, timeout=timeout, interval=interval)

    return wait


class DbRows:
    """Reads the workhorse tables as plain values, for before/after comparisons."""

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor

    def _dicts(self, sql: str, params: list[Any]) -> list[dict[str, Any]]:
        self.cursor.execute(sql, params)
        names = [col[0] for col in self.cursor.description]
        return [dict(zip(names, row, strict=True)) for row in self.cursor.fetchall()]

    def delete_all(self) -> None:
        """Empty every workhorse table but the schema version."""
        delete_workhorse_rows(self.cursor)

    def counts(self) -> dict[str, int]:
        """Row count of every workhorse table."""
        found = {}
        for table in WORKHORSE_TABLES:
            self.cursor.execute(f"SELECT count(*) FROM {table}")
            found[table] = self.cursor.fetchone()[0]
        return found

    def of_job(self, job_id: int) -> dict[str, Any]:
        """Every row stored about one job, table by table."""
        one = "SELECT * FROM {} WHERE {} = %s"
        return {
            "job": self._dicts(one.format("workhorse_job", "id"), [job_id]),
            "runtime": self._dicts(one.format("workhorse_job_runtime", "job_id"), [job_id]),
            "outcome": self._dicts(one.format("workhorse_job_outcome", "job_id"), [job_id]),
            "query": self._dicts(one.format("workhorse_job_query", "job_id"), [job_id]),
            # The events as the timeline shows them: the stored ones and those
            # it derives from other rows (an enqueue, a claim, a success).
            "events": self._dicts(
                "SELECT at, kind, attempt, worker_id, data"
                " FROM workhorse_job_timeline_v1(%s, p_limit => 100000) WHERE source = 'event'",
                [job_id],
            ),
            "stored_events": self._dicts(
                "SELECT * FROM workhorse_job_event WHERE job_id = %s ORDER BY id", [job_id]
            ),
            "attempts": self._dicts(
                "SELECT * FROM workhorse_attempt_history WHERE job_id = %s ORDER BY id", [job_id]
            ),
            "checkpoints": self.checkpoints(job_id),
        }

    def checkpoints(self, job_id: int) -> list[dict[str, Any]]:
        """The job's checkpoint and sleep rows, by name."""
        return self._dicts(
            "SELECT * FROM workhorse_job_checkpoint WHERE job_id = %s ORDER BY name", [job_id]
        )

    def fingerprint(self, job_id: int) -> tuple:
        """A one-query summary of ``of_job``: live and terminal rows, history
        counts, checkpoints."""
        self.cursor.execute(
            """
            SELECT (SELECT row_to_json(rt)::text FROM workhorse_job_runtime rt WHERE job_id = %s),
                   (SELECT row_to_json(o)::text FROM workhorse_job_outcome o WHERE job_id = %s),
                   (SELECT count(*) FROM workhorse_job_event WHERE job_id = %s),
                   (SELECT count(*) FROM workhorse_attempt_history WHERE job_id = %s),
                   (SELECT string_agg(name || ':' || kind || ':' || result::text, ',' ORDER BY name)
                    FROM workhorse_job_checkpoint WHERE job_id = %s)
            """,
            [job_id] * 5,
        )
        return self.cursor.fetchone()

    def runtime(self, job_id: int) -> dict[str, Any] | None:
        rows = self._dicts("SELECT * FROM workhorse_job_runtime WHERE job_id = %s", [job_id])
        return rows[0] if rows else None

    def outcome(self, job_id: int) -> dict[str, Any] | None:
        rows = self._dicts("SELECT * FROM workhorse_job_outcome WHERE job_id = %s", [job_id])
        return rows[0] if rows else None

    def now(self):
        """The database clock (the one leases and run_at use)."""
        self.cursor.execute("SELECT clock_timestamp()")
        return self.cursor.fetchone()[0]


@pytest.fixture
def db_rows(cursor) -> DbRows:
    return DbRows(cursor)


@pytest.fixture(name="side_alias")
def side_alias_fixture() -> Iterator[str]:
    """The alias ``side``, a second connection to the test database
    (``tests.helpers.side_alias``)."""
    with side_alias() as alias:
        yield alias
