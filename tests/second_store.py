"""A second store for the tests: the alias ``second`` on a database of its own.

``second_store()`` adds the alias to ``django.db.connections`` and migrates
its database, as a project with two primaries has them: by default a fresh
database beside the test database on the same server (dropped at the end);
given a URL, that database (another server's, for the acceptance test).
The alias is removed at the end, so no other test sees it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import sql

SECOND = "second"


def _conninfo(settings: dict[str, Any], dbname: str) -> dict[str, Any]:
    return {
        "host": settings.get("HOST") or "127.0.0.1",
        "port": settings.get("PORT") or 5432,
        "user": settings.get("USER") or "postgres",
        "password": settings.get("PASSWORD") or None,
        "dbname": dbname,
    }


@contextlib.contextmanager
def second_store(url: str | None = None) -> Iterator[str]:
    """The alias ``second`` on a migrated database of its own (``url``, else a
    fresh one on the test server); removed again at the end."""
    import environ
    from django.core.management import call_command
    from django.db import connections

    default = dict(connections["default"].settings_dict)
    settings = dict(default)
    created = None
    if url is None:
        created = f"{default['NAME']}_second"[:63]
        with psycopg.connect(**_conninfo(default, "postgres"), autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(created))
            )
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(created)))
        settings["NAME"] = created
    else:
        parsed = environ.Env.db_url_config(url)
        settings.update(
            {
                key: parsed[key]
                for key in ("NAME", "HOST", "PORT", "USER", "PASSWORD")
                if key in parsed
            }
        )
    settings["TEST"] = {**default.get("TEST", {}), "NAME": settings["NAME"]}
    connections.settings[SECOND] = settings
    try:
        call_command("migrate", database=SECOND, verbosity=0, interactive=False)
        yield SECOND
    finally:
        connections[SECOND].close()
        del connections[SECOND]
        del connections.settings[SECOND]
        if created is not None:
            with psycopg.connect(**_conninfo(default, "postgres"), autocommit=True) as conn:
                conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                        sql.Identifier(created)
                    )
                )
