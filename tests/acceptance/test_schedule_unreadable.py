"""One schedule whose next run Python cannot load does not stop the others
(docs/schedules.md): a real worker's sweep skips it, says so once, and an
every-2-seconds schedule beside it keeps firing."""

from __future__ import annotations

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def schedule_jobs(name: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM workhorse_job WHERE idempotency_key LIKE %s",
            [f"schedule:{name}:%"],
        )
        return cursor.fetchone()[0]


def test_an_every_2_seconds_schedule_keeps_firing_beside_a_row_set_to_minus_infinity(
    start_worker, wait_until
):
    every = {"job": "jobtests.jobs.record", "cron": "*/2 * * * * *"}
    worker = start_worker(
        "--queues",
        "jobtests.record",
        settings={
            "SCHEDULE_SWEEP_INTERVAL": 0.3,
            "SCHEDULES": {
                "broken": {**every, "payload": {"label": "broken"}},
                "tick": {**every, "payload": {"label": "tick"}},
            },
        },
    )
    # What an operator might type to make a schedule due now.
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE workhorse_schedule SET next_run_at = '-infinity' WHERE name = 'broken'"
        )
    fired_before = schedule_jobs("tick")

    wait_until(
        lambda: schedule_jobs("tick") >= fired_before + 3,
        timeout=60,
        interval=0.2,
        what="three more slots of the every-2-seconds schedule",
    )

    assert worker.alive()
    reports = [
        line for line in worker.stderr.splitlines() if "schedule 'broken' is skipped" in line
    ]
    assert len(reports) == 1, worker.stderr
    assert "next_run_at -infinity is outside the years 1 to 9999 (UTC)" in reports[0]
    assert "set it to NULL" in reports[0]
    assert "timestamp too small" not in worker.stderr
    assert worker.stop() == 0
