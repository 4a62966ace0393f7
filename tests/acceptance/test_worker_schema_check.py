"""``runworker`` refuses a database whose django-workhorse schema it does not
understand (docs/worker.md: "a schema that does not match ends the command
with a message naming what to fix"): the migration to run, or the code to
upgrade; no traceback, no claim."""

from __future__ import annotations

import pytest
from django.db import connection
from jobtests.jobs import record

from django_workhorse.db import store

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


@pytest.fixture
def schema_version():
    """``schema_version(n)`` records schema version n; the real one comes back at teardown."""

    def record_version(version: int) -> None:
        with connection.cursor() as cursor:
            cursor.execute("UPDATE workhorse_schema SET version = %s", [version])

    yield record_version
    record_version(store.SCHEMA_VERSION)


@pytest.mark.parametrize(
    ("version", "fix"),
    [
        (0, "run `manage.py migrate django_workhorse 0001_initial`"),
        (store.SCHEMA_VERSION + 1, "upgrade django-workhorse on this machine"),
    ],
)
def test_a_schema_the_worker_does_not_speak_stops_it_naming_the_fix(
    start_worker, schema_version, version, fix
):
    handle = record.enqueue(label="left alone")
    schema_version(version)

    worker = start_worker("--burst", "--queues", "jobtests.record", ready=False)

    assert worker.wait_exit(60) != 0
    assert f"schema version {version}" in worker.stderr, worker.stderr
    assert fix in worker.stderr, worker.stderr
    assert "Traceback" not in worker.stderr, worker.stderr
    assert not worker.worker_ids()
    assert handle.refresh().status == "ready"


def test_a_newer_schema_stops_a_fleet_before_any_worker_process_starts(
    start_worker, schema_version
):
    """``--processes`` checks once, in the supervisor's place: one line, not
    one per child and a supervisor giving up on children that keep exiting."""
    schema_version(store.SCHEMA_VERSION + 1)

    fleet = start_worker("--processes", "2", ready=False)

    assert fleet.wait_exit(60) == 1
    assert fleet.stderr.count("upgrade django-workhorse on this machine") == 1, fleet.stderr
    assert "supervisor" not in fleet.stderr, fleet.stderr
    assert "Traceback" not in fleet.stderr, fleet.stderr
