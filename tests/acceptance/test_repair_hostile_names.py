"""A function's name is data, never SQL (docs/settings.md#installed-sql-functions).

Any role that may create functions in the schema (every role, before
PostgreSQL 15) can make a ``workhorse_*`` function whose quoted name holds
spaces, quotes, capitals or whole statements. ``check`` reports it
(``workhorse.E005``) under its name as the database quotes it, and
``workhorse_repair_sql`` drops it by its catalog id: what the name says is
never run, and the odd name does not keep ``runworker`` from starting."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from jobtests.jobs import record

from django_workhorse.db import installed_sql, store
from django_workhorse.operations.checks import schema_messages

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

PLANTED = "workhorse_queue_names_v1(); DROP TABLE wh_victim; COMMIT; --"
"""Spliced after ``DROP FUNCTION``, this name drops a package function and
a table, and commits, whatever the repair does next."""

ODD_NAMES = ["workhorse_with space", 'workhorse_with"quote', "workhorse_Capitals"]


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def execute(sql: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql)


def create_function(name: str, argument: str = "") -> None:
    execute(
        f"CREATE FUNCTION {quoted(name)}({argument}) RETURNS integer LANGUAGE sql AS $$ SELECT 1 $$"
    )


def functions_named(name: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_proc WHERE proname = %s", [name])
        return cursor.fetchone()[0]


def table_exists(name: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        return cursor.fetchone()[0]


def check_messages() -> list[tuple[str, str]]:
    return [(message.id, message.msg) for message in schema_messages("default")]


@pytest.fixture
def put_back():
    """Whatever a test leaves, the package's functions come back."""
    yield
    with connection.cursor() as cursor:
        for oid in installed_sql.drift(cursor).extra_oids:
            store.drop_function(cursor, oid)
        for source in {d.source for d in installed_sql.package_functions().values()}:
            cursor.execute(source)
        cursor.execute("DROP TABLE IF EXISTS wh_victim")


def test_the_repair_drops_a_function_whose_name_holds_statements_without_running_them(
    put_back, capsys
):
    execute("CREATE TABLE wh_victim (id integer)")
    create_function(PLANTED)

    [(check_id, message)] = check_messages()
    assert check_id == "workhorse.E005"
    assert f"not the package's: {quoted(PLANTED)}()" in message

    call_command("workhorse_repair_sql")

    assert table_exists("wh_victim")
    assert functions_named(PLANTED) == 0
    assert functions_named("workhorse_queue_names_v1") == 1
    assert check_messages() == []
    assert quoted(PLANTED) in capsys.readouterr().out


@pytest.mark.parametrize("name", ODD_NAMES, ids=["space", "double-quote", "capitals"])
def test_check_names_a_stray_function_with_an_odd_name_as_the_database_quotes_it(put_back, name):
    create_function(name, "p integer")

    [(check_id, message)] = check_messages()

    assert check_id == "workhorse.E005"
    assert f"not the package's: {quoted(name)}(p integer)" in message


def test_stray_functions_with_odd_names_are_dropped_and_runworker_starts(put_back, start_worker):
    for name in ODD_NAMES:
        create_function(name)
        create_function(name, "p integer")  # two of one name: each is dropped
    handle = record.enqueue(label="after the repair")

    call_command("workhorse_repair_sql")

    assert [functions_named(name) for name in ODD_NAMES] == [0, 0, 0]
    assert check_messages() == []
    worker = start_worker("--burst", "--queues", "jobtests.record", ready=False)
    assert worker.wait_exit(60) == 0, worker.stderr
    assert handle.refresh().status == "succeeded"
