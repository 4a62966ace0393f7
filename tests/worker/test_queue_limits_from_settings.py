"""A worker writes the limits ``WORKHORSE['QUEUES']`` names for the queues it
serves when it starts (docs/settings.md, "Queue limits"): a key the entry
leaves out is no limit, an entry that names no limit key leaves the queue's
limits as ``set_queue_limits`` set them, and each change is logged at INFO."""

from __future__ import annotations

import logging

from django.db import connection

from tests.worker.conftest import IN_PROCESS

pytestmark = IN_PROCESS

QUEUE = "inproc.limited"
SET_FROM_SETTINGS = "limits set from settings"


def set_limits(concurrency, rate, period) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT * FROM workhorse_set_queue_limits_v1(%s, %s, %s, %s)",
            [QUEUE, concurrency, rate, period],
        )


def limits() -> tuple:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT concurrency_limit, rate_limit, extract(epoch FROM rate_period)::float8"
            " FROM workhorse_queue WHERE name = %s",
            [QUEUE],
        )
        return cursor.fetchone()


def limit_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if SET_FROM_SETTINGS in r.getMessage()]


def test_a_worker_writes_its_queues_settings_limits_at_start_and_a_missing_key_is_no_limit(
    start_worker, caplog
):
    set_limits(5, None, None)
    settings = {"QUEUES": {QUEUE: {"rate": 10, "period": 60}}}

    with caplog.at_level(logging.INFO, logger="django_workhorse.worker"):
        start_worker({QUEUE: 1}, **settings).stop()

    assert limits() == (None, 10, 60.0)
    assert limit_lines(caplog) == [
        f"workhorse: queue {QUEUE} limits set from settings: concurrency unlimited,"
        " rate 10 per 60 s"
    ]
    assert next(r for r in caplog.records if SET_FROM_SETTINGS in r.getMessage()).levelno == (
        logging.INFO
    )


def test_a_worker_whose_settings_limits_are_in_force_already_logs_nothing(start_worker, caplog):
    set_limits(2, None, None)

    with caplog.at_level(logging.INFO, logger="django_workhorse.worker"):
        start_worker({QUEUE: 1}, QUEUES={QUEUE: {"global_concurrency": 2}}).stop()

    assert limits() == (2, None, None)
    assert limit_lines(caplog) == []


def test_a_queues_entry_naming_no_limit_keeps_the_limits_set_at_run_time(start_worker, caplog):
    set_limits(3, 100, 60)

    with caplog.at_level(logging.INFO, logger="django_workhorse.worker"):
        start_worker({QUEUE: 2}, QUEUES={QUEUE: {"concurrency": 2}}).stop()

    assert limits() == (3, 100, 60.0)
    assert limit_lines(caplog) == []
