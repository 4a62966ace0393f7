"""The worker's own psycopg connections, opened from a Django database alias.

The worker keeps its claim, heartbeat and LISTEN connections outside Django's
per-thread connection handling: they live as long as the worker, autocommit,
so each SQL function call is its own short transaction. jsonb is read as text,
exactly as through a Django cursor, so ``store`` treats both alike.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
from django.db import connections
from psycopg.types.string import TextLoader


def connect(
    alias: str, *, application_name: str = "workhorse", wait_for_flush: bool = True
) -> psycopg.Connection:
    """A new autocommit connection to the database of ``alias``.

    ``wait_for_flush=False`` sets ``synchronous_commit = off`` for the
    session: its commits return before their WAL reaches disk. Only the claim
    loop asks for it (see docs/decisions.md): a claim lost with the last
    moments of a server crash leaves its job ready again, as if its worker
    had died, and every later write of that run is refused by the fence.
    """
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
    if not wait_for_flush:
        conn.execute("SET synchronous_commit = off")
    return conn


def retry_delays(first: float = 0.5, longest: float = 10.0) -> Iterator[float]:
    """Seconds to wait before each new try after a database error: doubling
    from ``first`` up to ``longest``, so that an outage of minutes is not
    met with a retry (and a log line) twice a second."""
    delay = first
    while True:
        yield delay
        delay = min(delay * 2, longest)
