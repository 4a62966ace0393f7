"""Helpers shared by the conftest files and tests (not fixtures)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

WORKHORSE_TABLES = (
    "workhorse_job",
    "workhorse_job_runtime",
    "workhorse_job_outcome",
    "workhorse_job_query",
    "workhorse_job_dependency",
    "workhorse_job_event",
    "workhorse_attempt_history",
    "workhorse_queue",
    "workhorse_schedule",
    "workhorse_job_checkpoint",
)
"""Every table that holds jobs or queue policy (not the schema version)."""


def delete_workhorse_rows(cursor: Any) -> None:
    """Empty every workhorse table but ``workhorse_schema``.

    DELETE, not TRUNCATE: for the few rows a test leaves it takes
    milliseconds, where TRUNCATE of the partitioned history tables (new files
    for every partition) takes most of a second.
    """
    cursor.execute("SELECT to_regclass('workhorse_job') IS NOT NULL")
    if cursor.fetchone()[0]:
        for table in (*WORKHORSE_TABLES[1:], WORKHORSE_TABLES[0]):
            cursor.execute(f"DELETE FROM {table}")


def poll_until(
    predicate: Callable[[], Any],
    *,
    timeout: float,
    interval: float,
    what: str | None = None,
    context: Callable[[], str] | None = None,
) -> Any:
    """Poll ``predicate`` until it returns something truthy and return that;
    fail after ``timeout`` seconds naming ``what``, followed by ``context()``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            message = f"not within {timeout} s: {what or predicate!r}"
            if context is not None:
                message += f"\n{context()}"
            pytest.fail(message, pytrace=False)
        time.sleep(interval)


def cut_connections(application_name: str) -> int:
    """Terminate the test database's sessions of ``application_name`` (as a
    network failure or a DBA would); how many were cut."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name = %s",
            [application_name],
        )
        return cursor.fetchone()[0]
