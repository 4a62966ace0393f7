"""``WORKHORSE["LOG_FORMAT"] = "json"``: the worker's log lines are JSON objects
that carry the job annotations."""

from __future__ import annotations

import json

import pytest
from jobtests.jobs import doomed, log_warning
from jobtests.tasks import add

from django_workhorse.models import Job, JobOutcome

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def test_json_log_lines_parse_and_carry_the_job_annotations(start_worker, wait_until):
    handle = log_warning.enqueue(message="hello in json")
    failing = doomed.enqueue()
    worker = start_worker(
        "--queues", "jobtests.logs,jobtests.doomed", settings={"LOG_FORMAT": "json"}
    )
    wait_until(lambda: JobOutcome.objects.filter(job_id=handle.id, state="succeeded").exists())
    wait_until(lambda: JobOutcome.objects.filter(job_id=failing.id, state="failed").exists())
    assert worker.stop() == 0

    lines = [json.loads(line) for line in worker.stderr.splitlines() if line.strip()]
    assert all(line["worker"] == worker.worker_id for line in lines)
    [from_handler] = [line for line in lines if line["message"].endswith("hello in json")]
    assert from_handler["logger"] == "jobtests"
    assert from_handler["level"] == "WARNING"
    assert {k: from_handler[k] for k in ("job_id", "job_name", "queue", "attempt")} == {
        "job_id": handle.id,
        "job_name": "jobtests.jobs.log_warning",
        "queue": "jobtests.logs",
        "attempt": 1,
    }
    [terminal] = [
        line for line in lines if line["level"] == "ERROR" and "failed at" in line["message"]
    ]
    assert (
        terminal["job_id"],
        terminal["job_name"],
        terminal["queue"],
        terminal["attempt"],
    ) == (failing.id, "jobtests.jobs.doomed", "jobtests.doomed", 2)
    assert "PlannedFailure" in terminal["exception"]
    [retrying] = [line for line in lines if "retrying in" in line["message"]]
    assert (retrying["job_id"], retrying["job_name"], retrying["attempt"]) == (
        failing.id,
        "jobtests.jobs.doomed",
        1,
    )


def test_text_logs_stay_plain_lines_by_default(start_worker, wait_until):
    handle = log_warning.enqueue(message="hello in text")
    worker = start_worker("--queues", "jobtests.logs")
    wait_until(lambda: JobOutcome.objects.filter(job_id=handle.id, state="succeeded").exists())
    assert worker.stop() == 0

    [line] = [line for line in worker.stderr.splitlines() if line.endswith("hello in text")]
    assert not line.startswith("{")


def test_the_sweepers_enqueued_line_carries_the_jobs_annotations(start_worker, wait_until):
    settings = {
        "LOG_FORMAT": "json",
        "SCHEDULE_SWEEP_INTERVAL": 0.3,
        "SCHEDULES": {"tick": {"job": "jobtests.jobs.record", "cron": "* * * * * *"}},
    }
    worker = start_worker("--queues", "jobtests.record", settings=settings)

    def scheduled():
        return Job.objects.filter(idempotency_key__startswith="schedule:tick:")

    wait_until(lambda: scheduled().exists(), what="a job enqueued by the schedule")
    wait_until(lambda: "enqueued job #" in worker.stderr, what="the sweeper's line")
    assert worker.stop() == 0

    lines = [json.loads(line) for line in worker.stderr.splitlines() if line.strip()]
    enqueued = [line for line in lines if "enqueued job #" in line["message"]]
    assert enqueued
    job_ids = set(scheduled().values_list("id", flat=True))
    for line in enqueued:
        assert line["job_id"] in job_ids
        assert f"enqueued job #{line['job_id']} " in line["message"]
        assert (line["job_name"], line["queue"]) == ("jobtests.jobs.record", "jobtests.record")
        assert "attempt" not in line, "the job has not run yet"


def test_every_line_is_json_when_djangos_own_console_handler_logs_a_task(start_worker, wait_until):
    # The test project runs with DEBUG on, as in development: Django's default
    # logging then gives the "django" logger a console handler of its own,
    # which the task signals' lines reach before the root's.
    result = add.enqueue(1, 2)
    worker = start_worker("--queues", "jobtests.tasks", settings={"LOG_FORMAT": "json"})
    wait_until(lambda: JobOutcome.objects.filter(job_id=int(result.id), state="succeeded").exists())
    assert worker.stop() == 0

    lines = [json.loads(line) for line in worker.stderr.splitlines() if line.strip()]
    task_lines = [line for line in lines if line["logger"] == "django.tasks"]
    assert task_lines
    for line in task_lines:
        assert (line["job_id"], line["job_name"]) == (int(result.id), "jobtests.tasks.add")
