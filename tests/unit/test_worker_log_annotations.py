"""The worker's own log lines about a job carry the job annotations in JSON logs."""

from __future__ import annotations

import json
import logging

import pytest

from django_workhorse.db.store import Recovered
from django_workhorse.operations.logformat import JsonFormatter
from django_workhorse.worker.failures import call_stall_hook, log_recovered


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(JsonFormatter("w:1:x"))
        self.lines: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


@pytest.fixture
def lines():
    handler = Lines()
    logger = logging.getLogger("django_workhorse.worker")
    logger.addHandler(handler)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)


def recovered(failed: bool) -> Recovered:
    return Recovered(7, "reports", 2, 3 if failed else 1, failed, "reports.jobs.nightly", 5, 2)


def annotations(line: dict) -> tuple:
    return (line.get("job_id"), line.get("job_name"), line.get("queue"), line.get("attempt"))


@pytest.mark.parametrize("failed", [False, True])
def test_stall_recovery_lines_carry_the_job_name(lines, failed):
    log_recovered(recovered(failed))

    [line] = lines
    assert annotations(line) == (7, "reports.jobs.nightly", "reports", 2)


def test_a_raising_stall_hook_line_carries_the_job_name(lines):
    def hook(failure):
        raise RuntimeError("hook broke")

    call_stall_hook(hook, recovered(True))

    [line] = lines
    assert annotations(line) == (7, "reports.jobs.nightly", "reports", 2)
