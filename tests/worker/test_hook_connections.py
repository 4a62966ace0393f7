"""Django connections an ``ON_JOB_FAILURE`` hook opens on the writer's thread
are closed after each batch, as after a request (docs/worker.md, "Failures,
retries, timeouts"), so a hook that uses the ORM leaks no connection."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, connections

import django_workhorse as workhorse
from tests.helpers import poll_until
from tests.worker.conftest import IN_PROCESS

pytestmark = IN_PROCESS

QUEUE = "inproc.hooked"
HOOK_CONNECTIONS: list[Any] = []
"""The Django connection each hook call used (the writer thread's own)."""


@workhorse.job(name="inproc.fails", queue=QUEUE, max_attempts=1)
def fails() -> None:
    raise ValueError("planned failure")


def hook_using_the_orm(failure: workhorse.JobFailure) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    HOOK_CONNECTIONS.append(connections["default"])


@pytest.fixture(autouse=True)
def _clear() -> None:
    HOOK_CONNECTIONS.clear()


def test_a_connection_an_on_job_failure_hook_opens_is_closed_after_its_batch(start_worker):
    assert connection.settings_dict["CONN_MAX_AGE"] == 0
    worker = start_worker({QUEUE: 1}, on_job_failure=f"{__name__}.hook_using_the_orm")
    fails.enqueue()

    poll_until(lambda: HOOK_CONNECTIONS, timeout=30, interval=0.02, what="the hook to run")
    (used,) = HOOK_CONNECTIONS
    assert used is not connections["default"]  # the writer thread's, not the test's
    poll_until(
        lambda: used.connection is None,
        timeout=10,
        interval=0.02,
        what="the hook's connection to be closed",
    )
    worker.stop()
