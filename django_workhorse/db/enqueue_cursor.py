"""The cursor a single enqueue writes through: Django's, over a driver
cursor kept per connection.

A single enqueue (``enqueue()``; a batch takes ``connection.cursor()``)
writes through Django's cursor wrapper (``CursorWrapper``, or
``CursorDebugWrapper`` while queries are logged) as any query does, so
execute wrappers, query logs, the tools that patch the wrapper and Django's
error translation all see it (tests/integration/test_enqueue_connection.py).
What it does not do is make a new psycopg cursor under the wrapper on every
call: ``kept_cursor`` takes the steps of ``connection.cursor()`` (health
check, connection, thread check, the wrapper class of the moment) around one
psycopg cursor kept for the connection, which holds its last one-row result
until the next enqueue. A new psycopg cursor looked up its result loaders
afresh on each call, and after the round trip to the server, with the
caches cold, making it cost ~20 us of client CPU per enqueue
(docs/decisions.md, "The single enqueue's own cost").

Where ``connection.cursor()`` is not Django's own (replaced on the
connection, as Django's ``SimpleTestCase`` guard, django-debug-toolbar and
some instrumentation do, or overridden by a backend class), and on a
connection shared between threads, an enqueue calls ``connection.cursor()``
itself, as before: whatever the replacement records or refuses, it still does.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper

_DJANGO_STEPS = (
    BaseDatabaseWrapper.cursor,
    BaseDatabaseWrapper._cursor,
    BaseDatabaseWrapper._prepare_cursor,
)
"""The methods ``connection.cursor()`` runs, as Django defines them."""

_KEPT = "_workhorse_enqueue_cursor"
"""The attribute of a connection (a Django database wrapper, one per thread)
holding ``(psycopg connection, psycopg cursor)``: the cursor kept for that
psycopg connection, replaced when Django connects again."""


def kept_cursor(db: BaseDatabaseWrapper) -> CursorWrapper | None:
    """Django's cursor wrapper for ``db`` around the psycopg cursor kept for
    its connection, connecting first if need be; None when ``db.cursor()`` is
    not Django's own or ``db`` is shared between threads (then the caller
    takes ``db.cursor()``). The wrapper is not to be closed: the next enqueue
    on the connection uses its cursor again."""
    kind = type(db)
    if (
        "cursor" in db.__dict__
        or (kind.cursor, kind._cursor, kind._prepare_cursor) != _DJANGO_STEPS
        or db.allow_thread_sharing
    ):
        return None
    # What connection.cursor() does, but for making a new psycopg cursor.
    db.close_if_health_check_failed()
    db.ensure_connection()  # refuses an async context, as cursor() does
    connection = db.connection
    kept: tuple[Any, Any] | None = db.__dict__.get(_KEPT)
    if kept is None or kept[0] is not connection:
        with db.wrap_database_errors:
            kept = (connection, db.create_cursor())
        setattr(db, _KEPT, kept)
    wrapper: CursorWrapper = db._prepare_cursor(kept[1])
    return wrapper
