"""The SQL functions installed in the database are the package's, or nothing runs
(docs/settings.md#installed-sql-functions): ``manage.py check --database``
reports a function changed by hand (``workhorse.E005``) naming it and the
fix, ``runworker`` refuses to start in one line, and ``workhorse_repair_sql``
re-creates the package's functions. Mixed releases: a worker whose release
has a migration the database lacks, or that lacks one the database has, runs
while the schema version is one it speaks (a newer version stops it:
tests/acceptance/test_worker_schema_check.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from jobtests.jobs import record

from django_workhorse.db import installed_sql, store
from django_workhorse.operations.checks import schema_messages
from tests.acceptance.conftest import TESTPROJECT, database_url

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

CHANGED = "workhorse_queue_names_v1"
"""The function the tests change: read by the admin and the operator
commands, never by a worker's claim loop."""

SCHEMA_SQL = Path(__file__).resolve().parents[2] / "docs" / "schema.sql"
NEWER_RELEASE = {"WORKHORSE_TEST_MIGRATIONS": "tests.newer_release.migrations"}


def execute(sql: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql)


@pytest.fixture
def put_back():
    """Whatever a test changes of the functions, the package's come back."""
    yield
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM django_migrations WHERE app = 'django_workhorse' AND name <> ALL(%s)",
            [list(installed_sql.package_migrations())],
        )
        for oid in installed_sql.drift(cursor).extra_oids:
            store.drop_function(cursor, oid)
        for source in {d.source for d in installed_sql.package_functions().values()}:
            cursor.execute(source)


def change_by_hand() -> None:
    """``CREATE OR REPLACE`` of one function with another body, as in psql."""
    statement = installed_sql.package_functions()[CHANGED].statement
    execute(statement.replace("AS $$", "AS $$\n-- changed by hand", 1))


def check_messages() -> list[tuple[str, str]]:
    return [(message.id, message.msg) for message in schema_messages("default")]


def test_the_package_digests_are_the_ones_docs_schema_sql_lists():
    listed = dict(
        re.findall(r"-- FUNCTION (\w+)\(.*\n.* -- body sha256 (\w+)", SCHEMA_SQL.read_text())
    )

    computed = {
        name: definition.body_sha256[:16]
        for name, definition in installed_sql.package_functions().items()
    }

    assert computed == listed


def test_a_migrated_database_has_the_package_functions():
    with connection.cursor() as cursor:
        assert not installed_sql.drift(cursor)
    assert check_messages() == []


def test_check_names_a_function_changed_by_hand_and_the_command_that_repairs_it(put_back):
    change_by_hand()

    [(check_id, message)] = check_messages()

    assert check_id == "workhorse.E005"
    assert f"changed: {CHANGED}" in message
    assert "changed by hand" in message
    assert "manage.py workhorse_repair_sql --database default" in message


@pytest.mark.parametrize(
    "alteration",
    [
        f"ALTER FUNCTION {CHANGED} VOLATILE",
        f"ALTER FUNCTION {CHANGED} SECURITY DEFINER",
        f"ALTER FUNCTION {CHANGED} SET work_mem = '64MB'",
    ],
    ids=["volatility", "security", "setting"],
)
def test_check_names_a_function_whose_attributes_were_altered(put_back, alteration):
    execute(alteration)

    [(check_id, message)] = check_messages()

    assert check_id == "workhorse.E005"
    assert f"changed: {CHANGED}" in message


def test_check_names_a_missing_function_and_one_the_package_does_not_make(put_back):
    execute(f"DROP FUNCTION {CHANGED}")
    execute(
        "CREATE FUNCTION workhorse_by_hand_v1(p integer) RETURNS integer"
        " LANGUAGE sql AS $$ SELECT p $$"
    )

    [(check_id, message)] = check_messages()

    assert check_id == "workhorse.E005"
    assert f"missing: {CHANGED}" in message
    assert "not the package's: workhorse_by_hand_v1(p integer)" in message


def test_a_whitespace_change_inside_the_body_counts_as_a_change(put_back):
    """The body is kept as written, so the digest sees every character:
    what is compared is exactly what runs."""
    statement = installed_sql.package_functions()[CHANGED].statement
    execute(statement.replace("AS $$", "AS $$ ", 1))

    assert [check_id for check_id, _ in check_messages()] == ["workhorse.E005"]


def test_runworker_refuses_a_function_changed_by_hand_in_one_line(put_back, start_worker):
    handle = record.enqueue(label="left alone")
    change_by_hand()

    worker = start_worker("--burst", "--queues", "jobtests.record", ready=False)

    assert worker.wait_exit(60) != 0
    assert f"changed: {CHANGED}" in worker.stderr, worker.stderr
    assert "run `manage.py workhorse_repair_sql --database default`" in worker.stderr
    assert "Traceback" not in worker.stderr, worker.stderr
    assert not worker.worker_ids()
    assert handle.refresh().status == "ready"


def test_workhorse_repair_sql_puts_the_package_functions_back(put_back, capsys):
    change_by_hand()
    execute("ALTER FUNCTION workhorse_list_schedules_v1 VOLATILE")
    execute("ALTER FUNCTION workhorse_prune_v1 RESET search_path")
    execute("CREATE FUNCTION workhorse_by_hand_v1() RETURNS integer LANGUAGE sql AS $$ SELECT 1 $$")

    call_command("workhorse_repair_sql")

    assert check_messages() == []
    said = capsys.readouterr().out
    assert CHANGED in said and "workhorse_list_schedules_v1" in said
    assert "workhorse_prune_v1" in said
    assert "workhorse_by_hand_v1()" in said


def test_workhorse_repair_sql_on_package_functions_does_nothing(capsys):
    call_command("workhorse_repair_sql")

    assert "nothing to do" in capsys.readouterr().out


def test_a_newer_release_with_a_pending_migration_runs_its_worker(put_back, start_worker):
    """The newer release re-creates a function in a migration not applied
    yet: the schema version is one it speaks, so its worker runs, and its
    ``check`` says to migrate (W002), naming the function that differs,
    not that the database was changed by hand."""
    handle = record.enqueue(label="run by the newer release")

    worker = start_worker("--burst", "--queues", "jobtests.record", env=NEWER_RELEASE, ready=False)

    assert worker.wait_exit(60) == 0, worker.stderr
    assert handle.refresh().status == "succeeded"
    checked = manage("check", "--database", "default", env=NEWER_RELEASE)
    assert checked.returncode == 0, checked.stderr
    assert "workhorse.E005" not in checked.stderr
    assert "workhorse.W002" in checked.stderr, checked.stderr
    assert "migration 0007_queue_names_fixed is not applied" in checked.stderr
    assert f"changed: {CHANGED}" in checked.stderr
    assert "run `manage.py migrate django_workhorse`" in checked.stderr
    assert "migration 0007_queue_names_fixed is not applied" in worker.stderr


def test_an_older_release_on_a_database_a_newer_one_migrated_runs_and_says_so(
    put_back, start_worker
):
    """The database has the newer release's migration (same schema version);
    this release's worker runs, saying a newer release migrated it."""
    manage("migrate", "django_workhorse", env=NEWER_RELEASE, check=True)
    handle = record.enqueue(label="run by the older release")

    worker = start_worker("--burst", "--queues", "jobtests.record", ready=False)

    assert worker.wait_exit(60) == 0, worker.stderr
    assert handle.refresh().status == "succeeded"
    assert "migrated by a newer django-workhorse (0007_queue_names_fixed)" in worker.stderr
    assert "workhorse.E005" not in manage("check", "--database", "default").stderr


def manage(*argv: str, env: dict[str, str] | None = None, check: bool = False):
    """``manage.py *argv`` of the test project in a subprocess, on the test database."""
    done = subprocess.run(
        [sys.executable, "manage.py", *argv],
        cwd=TESTPROJECT,
        env={
            **os.environ,
            "PYTHONPATH": str(TESTPROJECT.parent),
            "DATABASE_URL": database_url(),
            "DJANGO_SETTINGS_MODULE": "testproject.settings",
            **(env or {}),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done
