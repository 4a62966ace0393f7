"""``runworker`` flags and settings: bad values refused with a clear message;
``--burst`` drains what is due and exits. The operator commands, too, end
with a message, not a traceback, when their database cannot be reached."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.db import connection
from jobtests.jobs import record

from django_workhorse.models import JobOutcome, JobRuntime
from tests.acceptance.conftest import TESTPROJECT

UNREACHABLE = "postgres://postgres@127.0.0.1:1/workhorse"
"""Nothing listens on port 1: the first connection is refused."""

REFUSED = {
    "concurrency-0": (
        ["--concurrency", "0"],
        {},
        ["argument --concurrency", "must be at least 1, got 0"],
    ),
    "invalid-queue-name": (
        ["--queues", "bad name!"],
        {},
        ["argument --queues", "queue name 'bad name!' is not valid"],
    ),
    "negative-poll-interval": (
        ["--queues", "jobtests.record"],
        {"POLL_INTERVAL": -1},
        ["WORKHORSE['POLL_INTERVAL']", "must be a positive duration, got -1"],
    ),
    "negative-poll-interval-flag": (
        ["--queues", "jobtests.record", "--poll-interval", "-1"],
        {},
        ["argument --poll-interval", "must be more than 0 seconds, got -1"],
    ),
    "infinite-lock-duration": (
        ["--queues", "jobtests.record", "--lock-duration", "inf"],
        {},
        ["argument --lock-duration", "must be at most 3155760000 seconds, got inf"],
    ),
    "nan-poll-interval": (
        ["--queues", "jobtests.record", "--poll-interval", "nan"],
        {},
        ["argument --poll-interval", "must be more than 0 seconds, got nan"],
    ),
    "lock-duration-beyond-an-interval": (
        ["--queues", "jobtests.record", "--lock-duration", "1e300"],
        {},
        ["argument --lock-duration", "must be at most 3155760000 seconds"],
    ),
    "infinite-lock-duration-setting": (
        ["--queues", "jobtests.record"],
        {"LOCK_DURATION": 1e300},
        ["WORKHORSE['LOCK_DURATION']", "must be at most 3155760000 seconds"],
    ),
    "undecodable-worker-id": (
        # A byte that is not UTF-8 reaches Python as a lone surrogate.
        ["--queues", "jobtests.record", "--id", "w\udcff"],
        {},
        ["argument --id", "contains a lone surrogate"],
    ),
    "worker-id-setting-with-nul": (
        ["--queues", "jobtests.record"],
        {"WORKER_ID": "w\u0000"},
        ["WORKHORSE['WORKER_ID']", "NUL character"],
    ),
    "concurrency-beyond-its-limit": (
        ["--queues", "jobtests.record", "--concurrency", "10001"],
        {},
        ["argument --concurrency", "must be at most 10000, got 10001"],
    ),
    "queue-setting-with-a-trailing-newline": (
        ["--queues", "jobtests.record"],
        {"DEFAULT_QUEUE": "jobs\n"},
        ["WORKHORSE['DEFAULT_QUEUE']", "queue name 'jobs\\n' is not valid"],
    ),
    "unimportable-hook": (
        ["--queues", "jobtests.record"],
        {"ON_JOB_FAILURE": "jobtests.hooks.nosuch"},
        ["cannot import 'jobtests.hooks.nosuch'"],
    ),
    "unimportable-cancel-hook": (
        ["--queues", "jobtests.record"],
        {"ON_JOB_CANCELED": "jobtests.hooks.nosuch_canceled"},
        ["cannot import 'jobtests.hooks.nosuch_canceled'"],
    ),
    "schedule-in-the-hosts-own-time-zone": (
        ["--queues", "jobtests.record"],
        {
            "SCHEDULES": {
                "nightly": {
                    "job": "jobtests.jobs.record",
                    "cron": "0 3 * * *",
                    "timezone": "localtime",
                }
            }
        },
        ["WORKHORSE['SCHEDULES']['nightly']", "timezone 'localtime' is not an IANA time zone"],
    ),
}
"""Invocations that must be refused: flags, WORKHORSE settings, what stderr must say."""


@pytest.fixture(scope="module")
def refused_workers(module_workers):
    """Every refused invocation, started at once: each spends its life importing Django."""
    return {
        case: module_workers.start(*flags, settings=settings, ready=False, name=case)
        for case, (flags, settings, _) in REFUSED.items()
    }


@pytest.mark.parametrize("case", list(REFUSED))
def test_bad_flags_and_settings_are_refused_with_a_message_naming_them(refused_workers, case):
    worker = refused_workers[case]
    code = worker.wait_exit(60)

    assert code != 0
    stderr = worker.stderr
    for text in REFUSED[case][2]:
        assert text in stderr, stderr
    assert "Traceback" not in stderr, stderr
    assert not worker.worker_ids()


def test_a_database_that_cannot_be_reached_at_start_is_a_message_not_a_traceback(start_worker):
    worker = start_worker(
        "--queues",
        "jobtests.record",
        env={"DATABASE_URL": UNREACHABLE},
        ready=False,
    )

    assert worker.wait_exit(60) != 0
    assert "cannot connect to database 'default'" in worker.stderr, worker.stderr
    assert "Traceback" not in worker.stderr, worker.stderr


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse", "jobtests"])
def test_burst_runs_the_due_jobs_then_exits_0(start_worker):
    due = [h.id for h in record.enqueue_many([{"label": str(i)} for i in range(20)])]
    later = record.options(delay=3600).enqueue(label="not due")
    worker = start_worker(
        "--queues", "jobtests.record", "--concurrency", "4", "--burst", ready=False
    )

    assert worker.wait_exit(60) == 0, worker.stderr
    assert worker.worker_ids()
    outcomes = JobOutcome.objects.filter(job_id__in=due)
    assert outcomes.count() == 20
    assert set(outcomes.values_list("state", flat=True)) == {"succeeded"}
    assert JobRuntime.objects.get(job_id=later.id).state == "scheduled"


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse", "jobtests"])
def test_burst_also_runs_a_job_whose_lease_expired_while_no_worker_ran(start_worker):
    orphan = record.enqueue(label="its worker is gone")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT job_id FROM workhorse_claim_many_v1("
            "'gone-worker', ARRAY['jobtests.record'], ARRAY[1], 0.01)"
        )
        assert cursor.fetchone()[0] == orphan.id
        cursor.execute("SELECT pg_sleep(0.05)")  # the lease expires on the database clock

    worker = start_worker("--queues", "jobtests.record", "--burst", ready=False)

    assert worker.wait_exit(60) == 0, worker.stderr
    assert "recovered from an expired lease" in worker.stderr
    assert JobOutcome.objects.get(job_id=orphan.id).state == "succeeded"


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["workhorse_status"], "CommandError: cannot read the queues"),
        (
            ["workhorse_queue", "pause", "jobtests.record"],
            "CommandError: cannot pause queue 'jobtests.record' on database 'default'",
        ),
        (["workhorse_prune"], "CommandError: prune failed on database 'default'"),
    ],
    ids=["status", "queue", "prune"],
)
def test_an_operator_command_whose_database_cannot_be_reached_says_so_without_a_traceback(
    command, message
):
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(TESTPROJECT.parent), os.environ.get("PYTHONPATH")])
        ),
        "DATABASE_URL": UNREACHABLE,
        "DJANGO_SETTINGS_MODULE": "testproject.settings",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", *command],
        cwd=TESTPROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 1, done.stderr
    assert message in done.stderr, done.stderr
    assert "Connection refused" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
