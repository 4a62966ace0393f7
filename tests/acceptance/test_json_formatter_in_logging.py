"""``django_workhorse.operations.logformat.JsonFormatter`` named in a project's
``LOGGING`` (docs/observability.md) formats the lines of the handlers that
use it as ``LOG_FORMAT = "json"`` formats every line: ``worker`` on each one,
the job's annotations on those about a job."""

from __future__ import annotations

import json
import os

import pytest
from jobtests.jobs import doomed, log_warning

from django_workhorse.models import JobOutcome

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

SETTINGS = """\
from testproject.settings import *  # noqa: F403

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "django_workhorse.operations.logformat.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
"""


def test_a_json_formatter_named_in_logging_writes_what_log_format_json_writes(
    start_worker, wait_until, tmp_path
):
    (tmp_path / "json_logging_settings.py").write_text(SETTINGS)
    env = {
        "DJANGO_SETTINGS_MODULE": "json_logging_settings",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])),
    }
    handle = log_warning.enqueue(message="hello from LOGGING")
    failing = doomed.enqueue()
    worker = start_worker("--queues", "jobtests.logs,jobtests.doomed", env=env)
    wait_until(lambda: JobOutcome.objects.filter(job_id=handle.id, state="succeeded").exists())
    wait_until(lambda: JobOutcome.objects.filter(job_id=failing.id, state="failed").exists())
    assert worker.stop() == 0

    lines = [json.loads(line) for line in worker.stderr.splitlines() if line.strip()]
    assert lines
    assert [line for line in lines if line.get("worker") != worker.worker_id] == []
    [from_handler] = [line for line in lines if line["message"].endswith("hello from LOGGING")]
    assert (from_handler["job_id"], from_handler["queue"], from_handler["attempt"]) == (
        handle.id,
        "jobtests.logs",
        1,
    )
    [terminal] = [
        line for line in lines if line["level"] == "ERROR" and "failed at" in line["message"]
    ]
    assert (terminal["job_id"], terminal["job_name"], terminal["attempt"]) == (
        failing.id,
        "jobtests.jobs.doomed",
        2,
    )
