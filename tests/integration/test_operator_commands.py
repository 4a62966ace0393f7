"""``workhorse_status`` and ``workhorse_queue``: the operator's view from a terminal."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from django_workhorse import Admin
from django_workhorse.db import store
from django_workhorse.worker.presence import describe_worker
from tests.factories import ActiveJobFactory, FailedJobFactory, ReadyJobFactory

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_status_prints_a_row_per_queue_and_the_workers_holding_jobs():
    FailedJobFactory(queue="status-q")
    ActiveJobFactory(queue="status-q", worker="host:1:abc")
    ReadyJobFactory(queue="status-q")

    text = run("workhorse_status")

    header, row = text.splitlines()[:2]
    assert header.split()[:4] == ["queue", "paused", "blocked", "scheduled"]
    assert row.split()[:9] == ["status-q", "no", "0", "0", "1", "1", "0", "1", "0"]
    assert "host:1:abc: 1 job(s) running" in text
    assert "workers connected: 0" in text


def test_status_json_is_for_machines():
    ReadyJobFactory(queue="status-json")
    Admin().pause_queue("status-json")

    data = json.loads(run("workhorse_status", "--json"))

    (queue,) = [q for q in data["queues"] if q["queue"] == "status-json"]
    assert queue["paused"] is True and queue["ready"] == 1
    assert queue["oldest_ready_seconds"] >= 0
    assert data["workers"] == {
        "connected": 0,
        "holding_jobs": [],
        "seen": [],
        "connections": {},
    }


def test_status_lists_the_workers_their_heartbeats_describe():
    info = describe_worker("host-s:7:abc", {"status-w": 2}, 1, 15.0, "batched")
    with connection.cursor() as cursor:
        store.heartbeat_many(cursor, "host-s:7:abc", [], [], 30, json.dumps(info))

    text = run("workhorse_status")
    (seen,) = json.loads(run("workhorse_status", "--json"))["workers"]["seen"]

    assert "host-s:7:abc on " in text and "1/2 slots busy, status-w(2), successes batched" in text
    assert (
        seen["worker_id"],
        seen["queues"],
        seen["busy"],
        seen["silent"],
        seen["success_route"],
    ) == ("host-s:7:abc", {"status-w": 2}, 1, False, "batched")


def test_status_shows_each_queues_limits():
    ReadyJobFactory(queue="status-limits")
    ReadyJobFactory(queue="status-free")
    Admin().set_queue_limits("status-limits", global_concurrency=3, rate=100, period=60)

    text = run("workhorse_status")
    data = json.loads(run("workhorse_status", "--json"))

    (row,) = [line for line in text.splitlines() if line.startswith("status-limits ")]
    assert row.endswith("3 at once, 100/60s")
    (free,) = [line for line in text.splitlines() if line.startswith("status-free ")]
    assert free.endswith(" -")
    (limited,) = [q for q in data["queues"] if q["queue"] == "status-limits"]
    assert (limited["concurrency_limit"], limited["rate_limit"]) == (3, 100)
    assert limited["rate_period_seconds"] == 60


def test_status_watch_refreshes_until_its_count():
    ReadyJobFactory(queue="status-watch")
    lines = run("workhorse_status", "--json", "--watch", "0.1", "--count", "3").splitlines()
    assert len(lines) == 3 and all(json.loads(line)["queues"] for line in lines)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--watch", "0"], "from 0.1 to 86400"),
        (["--watch", "nan"], "from 0.1 to 86400"),
        (["--watch", "soon"], "not a number"),
        (["--database", "nope"], "not an alias"),
        (["--database="], "'' is not an alias of settings.DATABASES"),
        (["--watch", "1", "--count", "0"], "--count: must be at least 1, got 0"),
        (["--watch", "1", "--count", "-2"], "--count: must be at least 1, got -2"),
        (["--watch", "1", "--count", "many"], "--count: expected a whole number, got 'many'"),
        (["--count", "3"], "--count 3 counts the refreshes of --watch; add --watch SECONDS"),
    ],
)
def test_status_refuses_bad_flags_with_a_clear_error(args, message):
    with pytest.raises(CommandError, match=message):
        run("workhorse_status", *args)


def test_queue_command_pauses_and_resumes():
    # jobtests.record is the queue of a registered job, with nothing enqueued.
    assert run("workhorse_queue", "pause", "jobtests.record").strip() == (
        "queue 'jobtests.record' is paused"
    )
    assert run("workhorse_queue", "pause", "jobtests.record").strip() == (
        "queue 'jobtests.record' was already paused"
    )
    assert run("workhorse_queue", "resume", "jobtests.record").strip() == (
        "queue 'jobtests.record' is running"
    )


@pytest.mark.parametrize("action", ["pause", "resume"])
def test_queue_command_refuses_an_unknown_queue_and_names_the_known_ones(action):
    with pytest.raises(CommandError, match=r"unknown queue 'jobtests\.recrod'.*jobtests\.record"):
        run("workhorse_queue", action, "jobtests.recrod")
    assert Admin().queue_names() == []  # no policy row was made for the typo


def test_queue_command_pauses_a_queue_declared_only_in_settings(settings):
    settings.WORKHORSE = {"QUEUES": {"declared-only": {"concurrency": 1}}}
    assert run("workhorse_queue", "pause", "declared-only").strip() == (
        "queue 'declared-only' is paused"
    )


@pytest.mark.parametrize("name", ["bad name", "q\x00", ".dot"])
def test_queue_command_refuses_a_bad_name(name):
    with pytest.raises(CommandError, match="not a queue name"):
        run("workhorse_queue", "pause", name)


def test_prune_refuses_a_bad_retention_setting(settings):
    settings.WORKHORSE = {"RETENTION": {"HISTORY": "a week"}}
    with pytest.raises(CommandError, match=r"WORKHORSE\['RETENTION'\]\['HISTORY'\]"):
        run("workhorse_prune", "--dry-run")


def declare_schedules() -> None:
    """Two schedules as a worker's start writes them; one planned by a sweep, one paused."""
    from django.db import connection

    from django_workhorse.core.schedules import Schedule, sync
    from django_workhorse.worker.scheduler import sweep

    with connection.cursor() as cursor:
        sync(
            cursor,
            [
                Schedule("nightly", "jobtests.jobs.record", "0 3 * * *", "Europe/Paris"),
                Schedule("hourly", "jobtests.jobs.record", "0 * * * *", catch_up="all"),
            ],
        )
        sweep(cursor)
    Admin().pause_schedule("hourly")


def test_status_lists_the_schedules_and_their_next_run():
    declare_schedules()
    nightly = next(s for s in Admin().list_schedules() if s.name == "nightly")
    assert nightly.next_run_at is not None and nightly.next_run_at.hour in (1, 2)  # 03:00 Paris

    text = run("workhorse_status")

    section = text[text.index("schedule  ") :].splitlines()
    assert section[0].split() == [
        "schedule",
        "job",
        "cron",
        "timezone",
        "next",
        "run",
        "last",
        "slot",
    ]
    assert section[1].split() == [
        "hourly",
        "jobtests.jobs.record",
        "0",
        "*",
        "*",
        "*",
        "*",
        "UTC",
        "paused",
        "-",
    ]
    assert section[2].split()[:9] == [
        "nightly",
        "jobtests.jobs.record",
        "0",
        "3",
        "*",
        "*",
        "*",
        "Europe/Paris",
        nightly.next_run_at.isoformat(),
    ]


def test_status_says_a_schedule_no_sweep_has_planned_runs_at_the_next_sweep():
    from django.db import connection

    from django_workhorse.core.schedules import Schedule, sync

    with connection.cursor() as cursor:
        sync(cursor, [Schedule("unplanned", "jobtests.jobs.record", "0 3 * * *", "UTC")])

    text = run("workhorse_status")

    section = text[text.index("schedule  ") :].splitlines()
    (row,) = [line for line in section if line.startswith("unplanned ")]
    assert row.split()[7:] == ["UTC", "at", "the", "next", "sweep", "-"]


def test_status_json_carries_the_schedules():
    declare_schedules()

    data = json.loads(run("workhorse_status", "--json"))

    hourly, nightly = data["schedules"]
    # Kept while paused, though not used: resuming plans the first slot after now.
    assert hourly.pop("next_run_at") is not None
    assert hourly == {
        "name": "hourly",
        "job": "jobtests.jobs.record",
        "queue": "jobtests.record",
        "cron": "0 * * * *",
        "timezone": "UTC",
        "catch_up": "all",
        "paused": True,
        "last_slot_at": None,
        "last_job_id": None,
        "unreadable": None,
    }
    assert (nightly["name"], nightly["paused"], nightly["timezone"]) == (
        "nightly",
        False,
        "Europe/Paris",
    )
    assert nightly["next_run_at"] == Admin().list_schedules()[1].next_run_at.isoformat()


def test_status_says_when_there_are_no_schedules():
    assert "schedules: none" in run("workhorse_status")
    assert json.loads(run("workhorse_status", "--json"))["schedules"] == []
