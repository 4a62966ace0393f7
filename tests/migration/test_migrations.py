"""The migrations install the schema from the shipped .sql files, reverse
cleanly, and the schema version check tells a user which migration to run."""

import re
from importlib import resources
from io import StringIO

import pytest
from demo.jobs import add
from django.core.checks import Error, Warning
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from django_workhorse.core import registry
from django_workhorse.core.definitions import JobDefinition
from django_workhorse.db import store
from django_workhorse.db.sql_files import RunSQLFile
from django_workhorse.operations.checks import check_schema, schema_messages
from tests.helpers import WORKHORSE_TABLES, side_alias

SQL_FILES = sorted(
    entry.name
    for entry in resources.files("django_workhorse").joinpath("sql").iterdir()
    if entry.name.endswith(".sql")
)
# <function>_<migration number>.sql re-creates a function with a new body
# (docs/releasing.md); the function is named by its first file.
REPLACEMENTS = sorted(name for name in SQL_FILES if re.search(r"_\d{4}\.sql$", name))
FUNCTIONS = sorted(
    name.removesuffix(".sql")
    for name in SQL_FILES
    if name.startswith("workhorse_") and name not in REPLACEMENTS
)
TABLES = [*WORKHORSE_TABLES, "workhorse_schema"]


def workhorse_sql_operations() -> list[tuple[str, RunSQLFile]]:
    """(migration name, operation) of every RunSQLFile of django_workhorse, from disk."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    return [
        (name, operation)
        for (app, name), migration in sorted(loader.disk_migrations.items())
        if app == "django_workhorse"
        for operation in migration.operations
        if isinstance(operation, RunSQLFile)
    ]


def installed(cursor) -> tuple[list[str], list[str]]:
    """The workhorse relations (not partitions, indexes or sequences) and functions."""
    cursor.execute(
        """
        SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = current_schema() AND c.relname LIKE 'workhorse\\_%%'
          AND c.relkind IN ('r', 'p') AND NOT c.relispartition
        ORDER BY 1
        """
    )
    tables = [row[0] for row in cursor.fetchall()]
    cursor.execute(
        """
        SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = current_schema() AND p.proname LIKE 'workhorse\\_%%' ORDER BY 1
        """
    )
    return tables, [row[0] for row in cursor.fetchall()]


def leftovers(cursor) -> list[str]:
    """Any object at all whose name starts with workhorse_ (partitions, sequences...)."""
    cursor.execute(
        """
        SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = current_schema() AND relname LIKE 'workhorse\\_%%'
        UNION ALL
        SELECT proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = current_schema() AND proname LIKE 'workhorse\\_%%'
        """
    )
    return [row[0] for row in cursor.fetchall()]


def test_every_sql_file_is_referenced_by_exactly_one_migration():
    forwards = [operation.filename for _, operation in workhorse_sql_operations()]
    downs = [
        operation.reverse_file
        for _, operation in workhorse_sql_operations()
        if operation.reverse_file and operation.reverse_file.endswith(".down.sql")
    ]
    assert sorted(forwards + downs) == SQL_FILES


def test_a_replacement_file_recreates_its_function_in_its_own_migration_and_reverses_to_the_last():
    """``<function>_<NNNN>.sql`` runs in migration NNNN, re-creates
    ``<function>`` and is reversed by the file that made it before."""
    assert REPLACEMENTS, "no replacement file: this test checks nothing"
    latest: dict[str, str] = {}
    for migration, operation in workhorse_sql_operations():
        found = re.fullmatch(r"(workhorse_\w+?)(?:_(\d{4}))?\.sql", operation.filename)
        if found is None or not found.group(1).startswith("workhorse_"):
            continue
        function, number = found.groups()
        if number is not None:
            assert migration.startswith(number + "_"), operation.filename
            assert f"CREATE OR REPLACE FUNCTION {function}(" in operation.sql
            assert operation.reverse_file == latest[function], operation.filename
        latest[function] = operation.filename


def test_every_function_file_creates_and_reverses_the_function_it_is_named_after():
    operations = {op.filename: op for _, op in workhorse_sql_operations()}
    for function in FUNCTIONS:
        operation = operations[f"{function}.sql"]
        assert f"CREATE OR REPLACE FUNCTION {function}(" in operation.sql
        assert operation.drops_function == function


def test_sql_function_names_carry_a_version_suffix():
    assert FUNCTIONS
    assert all(name.rsplit("_", 1)[1].startswith("v") for name in FUNCTIONS)


@pytest.mark.django_db(transaction=True)
def test_migrations_reverse_to_zero_and_apply_again():
    try:
        call_command("migrate", "django_workhorse", "zero", verbosity=0)
        with connection.cursor() as cursor:
            assert leftovers(cursor) == []
            assert store.schema_version(cursor) is None
        (pending,) = schema_messages("default")
        assert isinstance(pending, Warning) and pending.id == "workhorse.W002"
        assert "manage.py migrate django_workhorse" in pending.msg
    finally:
        call_command("migrate", "django_workhorse", verbosity=0)

    with connection.cursor() as cursor:
        assert installed(cursor) == (sorted(TABLES), FUNCTIONS)
        assert store.schema_version(cursor) == store.SCHEMA_VERSION
        cursor.execute("SELECT to_regclass('workhorse_job_event_p' || to_char(now(), 'YYYYMMDD'))")
        assert cursor.fetchone()[0] is not None, "today's history partition is missing"
        handle = add.options(queue="after-migrate").enqueue(a=1, b=2)
        (claimed,) = store.claim_many(cursor, "w", ["after-migrate"], [1], 30)
        assert claimed.job_id == handle.id
    assert schema_messages("default") == []


@pytest.mark.django_db
def test_the_schema_check_is_silent_on_a_migrated_database():
    assert schema_messages("default") == []


@pytest.mark.django_db
def test_a_newer_schema_version_is_an_error_telling_to_upgrade_the_code(cursor):
    cursor.execute("UPDATE workhorse_schema SET version = 99")
    try:
        (error,) = schema_messages("default")
    finally:
        cursor.execute("UPDATE workhorse_schema SET version = %s", [store.SCHEMA_VERSION])
    assert isinstance(error, Error) and error.id == "workhorse.E002"
    assert "version 99" in error.msg
    assert "upgrade django-workhorse" in error.msg


@pytest.mark.django_db
def test_an_older_schema_version_is_an_error_naming_the_migration(cursor):
    cursor.execute("UPDATE workhorse_schema SET version = 0")
    try:
        (error,) = schema_messages("default")
    finally:
        cursor.execute("UPDATE workhorse_schema SET version = %s", [store.SCHEMA_VERSION])
    assert error.id == "workhorse.E002"
    assert "manage.py migrate django_workhorse 0001_initial" in error.msg


@pytest.mark.django_db
def test_manage_py_check_database_reports_the_schema_mismatch(cursor):
    cursor.execute("UPDATE workhorse_schema SET version = 99")
    try:
        with pytest.raises(SystemCheckError, match=r"workhorse\.E002"):
            call_command("check", databases=["default"], stdout=StringIO(), stderr=StringIO())
    finally:
        cursor.execute("UPDATE workhorse_schema SET version = %s", [store.SCHEMA_VERSION])


def bound_elsewhere() -> None:
    """A job of a project with a second store."""


@pytest.fixture(scope="module", name="side")
def module_side_alias():
    """``tests.helpers.side_alias`` for the module, so that it exists before
    pytest-django checks the test's ``databases``."""
    with side_alias() as alias:
        yield alias


@pytest.mark.django_db(
    transaction=True, databases=["default", "side"], available_apps=["django_workhorse"]
)
def test_the_schema_check_covers_a_database_a_job_is_bound_to(side, monkeypatch):
    monkeypatch.setattr(registry, "_jobs", dict(registry._jobs))
    alias = side
    with connection.cursor() as cursor:
        registry.register(JobDefinition(bound_elsewhere, name="tests.elsewhere", using=alias))
        cursor.execute("UPDATE workhorse_schema SET version = 99")
        try:
            messages = check_schema(databases=[alias])
        finally:
            cursor.execute("UPDATE workhorse_schema SET version = %s", [store.SCHEMA_VERSION])
    assert [message.id for message in messages] == ["workhorse.E002"]
    assert messages[0].msg.startswith("database 'side': ")


@pytest.mark.django_db
def test_makemigrations_check_finds_no_model_changes():
    out = StringIO()
    call_command("makemigrations", check=True, dry_run=True, stdout=out, verbosity=1)
    assert "No changes detected" in out.getvalue()
