"""What a project that is not set up yet hears, in one line with the fix.

The two first-hour mistakes that reach the database: a store alias that is
not PostgreSQL (``startproject`` gives SQLite) and tables not installed yet
(``enqueue`` before ``migrate``). Both would otherwise surface as a raw
driver error, the second with PostgreSQL's hint about type casts. The
happy path pays nothing: enqueue and the operator commands translate an
error only once the database has raised it.
"""

from __future__ import annotations

from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connections

from ..exceptions import SchemaVersionError

MISSING_OBJECT_STATES = frozenset({"42883", "42P01"})
"""undefined_function and undefined_table: what PostgreSQL answers when the
django-workhorse migrations were never applied to the database."""


def not_postgresql(alias: str) -> str | None:
    """Why database ``alias`` cannot hold django-workhorse's tables, or None.

    Read from ``settings.DATABASES`` alone: no connection is opened.
    """
    wrapper = connections[alias]
    if wrapper.vendor == "postgresql":
        return None
    engine = wrapper.settings_dict.get("ENGINE", "?")
    return (
        f"database {alias!r} is {wrapper.display_name} ({engine}); django-workhorse needs "
        f"PostgreSQL: set DATABASES[{alias!r}]['ENGINE'] to 'django.db.backends.postgresql' "
        "(a PostgreSQL server and psycopg), or point WORKHORSE['DATABASE'] at a PostgreSQL alias"
    )


def refuse_unless_postgresql(alias: str) -> None:
    """ImproperlyConfigured naming the alias and the fix, unless it is PostgreSQL."""
    problem = not_postgresql(alias)
    if problem is not None:
        raise ImproperlyConfigured(problem)


def tables_missing(exc: BaseException) -> bool:
    """Whether ``exc`` says a django-workhorse function or table does not exist."""
    cause = exc.__cause__ if isinstance(exc, DatabaseError) else exc
    state = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    return state in MISSING_OBJECT_STATES and "workhorse_" in str(exc)


def explained(exc: DatabaseError, alias: str) -> Exception | None:
    """The one-line error to raise instead of ``exc``, or None to let it be.

    Called only where ``exc`` was raised by a django-workhorse SQL call.
    """
    problem = not_postgresql(alias)
    if problem is not None:
        refusal: Exception = ImproperlyConfigured(problem)
        return refusal
    if tables_missing(exc) and not apps.is_installed("django_workhorse"):
        # migrate would answer "No migrations to apply": the app is the fix.
        return SchemaVersionError(
            f"database {alias!r} has no django-workhorse tables, and django_workhorse is not "
            "in INSTALLED_APPS: add 'django_workhorse' to INSTALLED_APPS, then run "
            "`manage.py migrate`"
        )
    if tables_missing(exc):
        return SchemaVersionError(
            f"database {alias!r} has no django-workhorse tables yet: run `manage.py migrate`"
        )
    return None


def reraise(exc: DatabaseError, alias: str) -> None:
    """Raise the one-line error ``explained`` finds for ``exc``; return
    when there is none (the caller re-raises ``exc`` as it was)."""
    better = explained(exc, alias)
    if better is not None:
        raise better from None
