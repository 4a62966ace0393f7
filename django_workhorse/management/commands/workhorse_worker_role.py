"""``manage.py workhorse_worker_role ROLE``: the grants a worker's database role needs.

Prints the SQL (or runs it, with ``--apply``, as the role that ran the
migrations) that lets ``ROLE`` run workers and enqueue jobs, and nothing more:
no DDL, no TRUNCATE, no other table of the application. docs/security.md
explains each grant.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import DatabaseError, connections

from ...core.limits import text_problem
from ...db.store import JOB_TABLES, Cursor
from ._operator import AliasCommand

READ_WRITE = (
    *JOB_TABLES,
    "workhorse_schedule",
    "workhorse_queue_minute",
    "workhorse_failure_hour",
    "workhorse_worker",
)
"""Tables the SQL functions (which run with the caller's rights) read and write."""
READ_ONLY = ("workhorse_schema",)
SEQUENCES = (
    "workhorse_job_id_seq",
    "workhorse_job_event_id_seq",
    "workhorse_attempt_history_id_seq",
    # A retried job's new life draws its fence floor here (workhorse_retry_v1).
    "workhorse_job_life_seq",
    "workhorse_bulk_action_id_seq",
)


def grant_statements(cursor: Cursor, role: str) -> list[str]:
    """The GRANT statements for ``role`` in the database of ``cursor``."""
    cursor.execute(
        "SELECT quote_ident(%s), quote_ident(current_database()), quote_ident(current_schema())",
        [role],
    )
    who, database, schema = cursor.fetchone()
    cursor.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc p"
        " WHERE p.proname LIKE 'workhorse\\_%' AND p.pronamespace = current_schema()::regnamespace"
        " ORDER BY 1"
    )
    functions = [row[0] for row in cursor.fetchall()]
    return [
        f"GRANT CONNECT ON DATABASE {database} TO {who}",
        f"GRANT USAGE ON SCHEMA {schema} TO {who}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {', '.join(READ_WRITE)} TO {who}",
        f"GRANT SELECT ON {', '.join(READ_ONLY)} TO {who}",
        f"GRANT USAGE ON SEQUENCE {', '.join(SEQUENCES)} TO {who}",
        *(f"GRANT EXECUTE ON FUNCTION {function} TO {who}" for function in functions),
    ]


class Command(AliasCommand):
    help = (
        "Print (or --apply) the grants that let a database role run django-workhorse "
        "workers without any right to change the schema or read other tables."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "role", help="an existing role, e.g. created with CREATE ROLE ... LOGIN"
        )
        super().add_arguments(parser)
        parser.add_argument("--apply", action="store_true", help="run the grants now")

    def handle(self, *args: Any, **options: Any) -> None:
        role, alias = options["role"], options["database"]
        if problem := text_problem(role, "the role name"):
            raise CommandError(problem)
        if not role:
            raise CommandError(
                "name the role, e.g. manage.py workhorse_worker_role workhorse_worker"
            )
        if alias not in connections.databases:
            raise CommandError(
                f"database {alias!r} is not an alias of settings.DATABASES "
                f"({', '.join(connections.databases)})"
            )
        try:
            with connections[alias].cursor() as cursor:
                cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
                if cursor.fetchone() is None:
                    cursor.execute("SELECT quote_ident(%s)", [role])
                    raise CommandError(
                        f"role {role!r} does not exist: create it first, e.g. "
                        f"CREATE ROLE {cursor.fetchone()[0]} LOGIN PASSWORD '...'"
                    )
                statements = grant_statements(cursor, role)
                if options["apply"]:
                    for statement in statements:
                        cursor.execute(statement)
        except DatabaseError as exc:
            raise CommandError(f"database {alias!r}: {str(exc).strip()}") from exc
        for statement in statements:
            self.stdout.write(statement + ";")
