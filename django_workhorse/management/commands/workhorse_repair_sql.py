"""``manage.py workhorse_repair_sql``: re-create the SQL functions changed by hand.

Migrations are how the package's functions reach a database; once every
migration is applied, ``migrate`` has nothing left to run, so a function
changed by hand since (``workhorse.E005``) stays changed. This command
re-runs, in one transaction, the package's own ``CREATE OR REPLACE
FUNCTION`` of each function that is missing or differs, and drops the
``workhorse_*`` functions the package does not make (by catalog id: a name
read from the catalog is never put into SQL). It runs only when the
database's django_workhorse migrations are exactly the package's.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError
from django.db import DatabaseError, connections, transaction

from ...db import installed_sql, store
from ...db.preflight import not_postgresql
from ._operator import AliasCommand


class Command(AliasCommand):
    help = (
        "Re-create the django-workhorse SQL functions that differ from the package's "
        "(workhorse.E005), in one transaction."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        alias = options["database"]
        if alias not in connections:
            raise CommandError(f"--database {alias!r} is not a key of settings.DATABASES")
        if (problem := not_postgresql(alias)) is not None:
            raise CommandError(problem)
        try:
            with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
                if not installed_sql.applied_migrations(cursor):
                    raise CommandError(
                        f"database {alias!r} has no django-workhorse tables yet: run "
                        "`manage.py migrate`"
                    )
                if installed_sql.migrations_differ(cursor):
                    raise CommandError(
                        f"database {alias!r}: its django_workhorse migrations are not this "
                        "package's: run `manage.py migrate django_workhorse` (with the "
                        "package that migrated it, if that one is newer) instead"
                    )
                found = installed_sql.drift(cursor)
                if not found:
                    self.stdout.write(
                        f"database {alias!r}: the django-workhorse functions are the "
                        "package's; nothing to do"
                    )
                    return
                functions = installed_sql.package_functions()
                sources = {functions[name].source for name in found.missing + found.changed}
                for source in sorted(sources):
                    cursor.execute(source)
                for oid in found.extra_oids:
                    store.drop_function(cursor, oid)
                left = installed_sql.drift(cursor)
                if left:
                    raise CommandError(
                        f"database {alias!r}: still differs after the repair "
                        f"({left.describe()}); nothing was changed"
                    )
        except DatabaseError as exc:
            raise CommandError(
                f"database {alias!r}: the repair failed and nothing was changed: {exc}"
            ) from exc
        self.stdout.write(f"database {alias!r}: re-created {found.describe()}")
