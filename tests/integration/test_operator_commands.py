"""``workhorse_status`` and ``workhorse_queue``: the operator's view from a terminal."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from django_workhorse import Admin
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
    assert data["workers"] == {"connected": 0, "holding_jobs": []}


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
    with pytest.raises(CommandError, match=r"RETENTION\['HISTORY'\]"):
        run("workhorse_prune", "--dry-run")
