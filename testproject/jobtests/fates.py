"""One job for every way a run can end, for the test that runs each way under
``run_jobs`` and under ``runworker`` and compares what was stored
(tests/acceptance/test_run_fates.py).

``fate(kind)`` ends as ``kind`` says; ``jobtests.tasks.fate_task(kind)`` is
the same as a Django task, so that its signals are compared too.
"""

from __future__ import annotations

import sys
import time
from datetime import timedelta

import django_workhorse as workhorse

from .jobs import PlannedFailure

QUEUE = "jobtests.fates"


def end_as(kind: str) -> str:
    """Return, raise, time out, cancel or sleep, as ``kind`` says."""
    if kind == "raise":
        raise PlannedFailure("failed on purpose")
    if kind == "system_exit":
        sys.exit(3)
    if kind == "keyboard_interrupt":
        raise KeyboardInterrupt("interrupted on purpose")
    if kind == "timeout":
        time.sleep(1.5)  # past its timeout of 1 s
        return "returned too late"
    if kind == "cancel":
        raise workhorse.JobCanceledError("nothing left to do")
    if kind == "sleep":
        workhorse.current_job().sleep("nap", timedelta(milliseconds=100))
        return "woke up"
    return "returned"


@workhorse.job(queue=QUEUE, max_attempts=2, backoff=workhorse.fixed(0), timeout=1)
def fate(kind: str) -> str:
    return end_as(kind)
