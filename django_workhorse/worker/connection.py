"""The worker's own psycopg connections, opened from a Django database alias.

The worker keeps its claim, heartbeat and LISTEN connections outside Django's
per-thread connection handling: they live as long as the worker, autocommit,
so each SQL function call is its own short transaction. jsonb is read as text,
exactly as through a Django cursor, so ``store`` treats both alike.
"""

from __future__ import annotations

import psycopg
from django.db import connections
from psycopg.types.string import TextLoader


def connect(alias: str, *, application_name: str = "workhorse") -> psycopg.Connection:
    """A new autocommit connection to the database of ``alias``."""
    wrapper = connections[alias]
    if wrapper.vendor != "postgresql":
        raise psycopg.NotSupportedError(
            f"database {alias!r} uses {wrapper.vendor}; django-workhorse needs PostgreSQL"
        )
    params = dict(wrapper.get_connection_params())
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("server_side_binding", None)
    params.setdefault("application_name", application_name)
    conn = psycopg.connect(**params, autocommit=True)
    conn.adapters.register_loader("jsonb", TextLoader)
    conn.adapters.register_loader("json", TextLoader)
    return conn
