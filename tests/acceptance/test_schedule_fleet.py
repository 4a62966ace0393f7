"""Repeatable schedules swept by real ``runworker`` processes: one job per slot
however many workers sweep, one catch-up job after an outage.

Three workers sweep an every-second schedule for ``FLEET_SECONDS``: 10 s
of slots in ``make test``, ``WORKHORSE_SOAK_ROUNDS`` seconds when that is
more (``make soak``: 200)."""

from __future__ import annotations

import os
from datetime import datetime, timedelta

import pytest
from django.db import connection
from jobtests.jobs import sleep

from django_workhorse.models import JobOutcome

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

QUEUE = ("--queues", "jobtests.record", "--concurrency", "4")
FLEET_SECONDS = max(10, int(os.environ.get("WORKHORSE_SOAK_ROUNDS", "0")))


def tick_settings(catch_up: str = "latest", sweep: float = 0.3) -> dict:
    return {
        "SCHEDULE_SWEEP_INTERVAL": sweep,
        "SCHEDULES": {
            "tick": {
                "job": "jobtests.jobs.record",
                "cron": "* * * * * *",
                "payload": {"label": "tick"},
                "catch_up": catch_up,
            }
        },
    }


def slots() -> list[datetime]:
    """The slot (run_at) of every job the schedule enqueued, in order; one per job."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT e.data->>'run_at' FROM workhorse_job j"
            " CROSS JOIN LATERAL workhorse_job_timeline_v1(j.id) e"
            " WHERE j.idempotency_key LIKE 'schedule:tick:%%' AND e.kind = 'enqueued' ORDER BY 1"
        )
        return [datetime.fromisoformat(row[0]) for row in cursor.fetchall()]


def schedule_state() -> tuple[datetime | None, datetime]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT next_run_at, now() FROM workhorse_schedule WHERE name = 'tick'")
        row = cursor.fetchone()
    return (row[0], row[1]) if row else (None, None)


@pytest.mark.soak
def test_three_workers_enqueue_exactly_one_job_per_slot(start_worker, wait_until):
    fleet = [start_worker(*QUEUE, settings=tick_settings("all"), ready=False) for _ in range(3)]
    for worker in fleet:
        worker.wait_ready()

    wait_until(
        lambda: len(slots()) >= 2 and slots()[-1] - slots()[0] >= timedelta(seconds=FLEET_SECONDS),
        timeout=FLEET_SECONDS + 90,
        interval=0.5,
        what=f"{FLEET_SECONDS} s of every-second slots",
    )
    for worker in fleet:
        assert worker.stop() == 0

    found = slots()
    assert len(found) == len(set(found)), "a slot got two jobs"
    expected = [found[0] + timedelta(seconds=i) for i in range(len(found))]
    assert found == expected, "every slot from the first to the last has its job"
    assert len(found) >= FLEET_SECONDS + 1


def test_a_worker_stopped_across_several_slots_makes_one_catch_up_job(start_worker, wait_until):
    first = start_worker(*QUEUE, settings=tick_settings())
    wait_until(lambda: len(slots()) >= 2, timeout=30, what="the schedule running")
    assert first.stop() == 0
    owed, _ = schedule_state()
    wait_until(
        lambda: schedule_state()[1] >= owed + timedelta(seconds=3),
        timeout=30,
        interval=0.2,
        what="three slots passing with no worker",
    )

    second = start_worker(*QUEUE, settings=tick_settings())
    wait_until(lambda: any(s >= owed for s in slots()), timeout=30, what="the catch-up job")
    assert second.stop() == 0

    after_outage = [s for s in slots() if s >= owed]
    catch_up = after_outage[0]
    assert catch_up - owed >= timedelta(seconds=3), "the missed slots made no job of their own"
    assert [s for s in slots() if owed <= s < catch_up] == []


def test_a_long_sweep_interval_leaves_due_slots_alone_until_the_next_sweep(
    start_worker, wait_until
):
    worker = start_worker(*QUEUE, settings=tick_settings(sweep=3600))
    planned = wait_until(lambda: schedule_state()[0], timeout=30, what="the first slot planned")
    wait_until(
        lambda: schedule_state()[1] >= planned + timedelta(seconds=3),
        timeout=30,
        interval=0.2,
        what="three slots passing",
    )

    assert slots() == []
    assert worker.stop() == 0


def test_a_burst_worker_syncs_schedules_but_does_not_sweep(start_worker):
    # Two seconds of work keep the burst worker up far longer than the
    # 0.3 s sweep interval an ordinary worker sweeps at (its first sweep is
    # at start, and plans the schedule's first slot).
    busy = sleep.enqueue(seconds=2)
    worker = start_worker(
        "--burst", "--queues", "jobtests.sleep", settings=tick_settings(), ready=False
    )
    assert worker.wait_exit(60) == 0, worker.stderr

    assert JobOutcome.objects.get(job_id=busy.id).state == "succeeded"
    next_run_at, row_exists = schedule_state()
    assert row_exists is not None, "the burst worker synced the schedule"
    assert next_run_at is None, "no sweep planned a slot"
    assert slots() == []


def test_a_schedule_payload_that_is_not_json_stops_runworker_with_a_command_error(start_worker):
    # WORKHORSE_JSON carries NaN as the settings' float('nan').
    bad = tick_settings()
    bad["SCHEDULES"]["tick"]["payload"] = {"label": float("nan")}
    worker = start_worker(*QUEUE, settings=bad, ready=False)

    assert worker.wait_exit(60) != 0
    assert "CommandError: WORKHORSE['SCHEDULES']['tick']: " in worker.stderr
    assert "payload['label'] is nan, which JSON cannot hold" in worker.stderr
    assert "Traceback" not in worker.stderr
    assert schedule_state() == (None, None), "nothing was synced"


def test_a_starting_worker_removes_the_schedules_no_longer_declared(start_worker):
    from django_workhorse.core.schedules import Schedule, sync

    with connection.cursor() as cursor:
        sync(cursor, [Schedule("stale", "jobtests.jobs.record", "0 3 * * *")])
    worker = start_worker(
        "--burst", "--queues", "jobtests.record", settings=tick_settings(), ready=False
    )
    assert worker.wait_exit(60) == 0, worker.stderr

    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM workhorse_schedule ORDER BY name")
        assert [row[0] for row in cursor.fetchall()] == ["tick"]
    assert "stale removed" in worker.stderr
    assert "tick added" in worker.stderr
