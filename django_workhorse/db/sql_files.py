"""SQL shipped as package data, and the migration operation that installs it.

Every SQL function lives in ``django_workhorse/sql/<name>.sql``; each file is
installed by exactly one migration through :class:`RunSQLFile`.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

from django.db import migrations


@cache
def read_sql(filename: str) -> str:
    """The text of ``django_workhorse/sql/<filename>``."""
    return resources.files("django_workhorse").joinpath("sql", filename).read_text("utf-8")


class RunSQLFile(migrations.RunSQL):
    """``RunSQL`` whose forward SQL is a file of ``django_workhorse/sql``.

    The reverse is either another file (``reverse_file``) or, for a function,
    a DROP of the function the file creates (``drops_function``).
    """

    def __init__(
        self,
        filename: str,
        *,
        reverse_file: str | None = None,
        drops_function: str | None = None,
    ) -> None:
        self.filename = filename
        self.reverse_file = reverse_file
        self.drops_function = drops_function
        if reverse_file:
            reverse = read_sql(reverse_file)
        elif drops_function:
            reverse = f"DROP FUNCTION IF EXISTS {drops_function}"
        else:
            reverse = None
        super().__init__(sql=read_sql(filename), reverse_sql=reverse)

    def deconstruct(self) -> tuple[str, list[str], dict[str, str]]:
        kwargs = {}
        if self.reverse_file:
            kwargs["reverse_file"] = self.reverse_file
        if self.drops_function:
            kwargs["drops_function"] = self.drops_function
        return (self.__class__.__qualname__, [self.filename], kwargs)

    def describe(self) -> str:
        return f"Run {self.filename}"

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        refuse_unless_postgresql(schema_editor.connection)
        super().database_forwards(app_label, schema_editor, from_state, to_state)


def function_file(filename: str) -> RunSQLFile:
    """The operation installing one SQL function's file, ``<function>.sql``:
    reversed by dropping the function the file is named after."""
    return RunSQLFile(filename, drops_function=filename.removesuffix(".sql"))


def schema_file(filename: str) -> RunSQLFile:
    """The operation running a file of tables, views or indexes, ``<name>.sql``:
    reversed by its ``<name>.down.sql``."""
    return RunSQLFile(filename, reverse_file=filename.removesuffix(".sql") + ".down.sql")


def refuse_unless_postgresql(connection: Any) -> None:
    """A one-line CommandError (what ``migrate`` prints without a traceback)
    when the migrations are applied to a database that is not PostgreSQL:
    its SQL would fail on the first statement with the backend's own error."""
    from django.core.management.base import CommandError

    from .preflight import not_postgresql

    problem = not_postgresql(connection.alias)
    if problem is not None:
        raise CommandError(f"django_workhorse's migrations cannot run here: {problem}")
