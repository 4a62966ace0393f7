"""A run ends the same under ``run_jobs`` as under ``runworker``.

``run_jobs`` (django_workhorse.testing) and the worker decide what becomes
of a claimed run in one place (``django_workhorse.worker.outcomes``): each way a
handler can end, and each way a claimed job can be refused before its
handler runs, is run once under ``run_jobs`` in the test's process and once
under a real ``runworker``, and what the database holds afterwards is
compared: the outcome row (state, attempts, error), every attempt of the
history, the Django Tasks signals the run sent, the ``ON_JOB_FAILURE`` and
``ON_JOB_CANCELED`` calls, and the handler spans with their outcome and
status (docs/testing.md). Both runners take the run through the same
executor and reporter (``django_workhorse.worker.executor``, ``.report``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.test import override_settings
from jobtests import spans
from jobtests.fates import QUEUE, fate
from jobtests.models import FailureCall, RunRecord
from jobtests.tasks import fate_task

import django_workhorse as workhorse
from django_workhorse.models import AttemptHistory, JobOutcome
from django_workhorse.testing import run_jobs

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

TASK_QUEUE = "jobtests.tasks"
HOOKS = {
    "ON_JOB_FAILURE": "jobtests.hooks.record_failure",
    "ON_JOB_CANCELED": "jobtests.hooks.record_canceled",
}


def enqueue_from_sql(name: str, payload_json: str) -> int:
    """Enqueue through the SQL function, as psql or newer code would: a name
    no handler answers to, or a payload ``enqueue`` would refuse."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT job_id FROM workhorse_enqueue_v1(%s, %s, %s::jsonb, 2)",
            [name, QUEUE, payload_json],
        )
        return int(cursor.fetchone()[0])


def fate_job(kind: str) -> Callable[[], int]:
    return lambda: fate.enqueue(kind=kind).id


def fate_task_job(kind: str) -> Callable[[], int]:
    return lambda: int(fate_task.enqueue(kind).id)


ENDINGS: dict[str, Callable[[], int]] = {
    "returns": fate_job("return"),
    "raises an Exception": fate_job("raise"),
    "raises SystemExit": fate_job("system_exit"),
    "raises KeyboardInterrupt": fate_job("keyboard_interrupt"),
    "times out": fate_job("timeout"),
    "is canceled": fate_job("cancel"),
    "sleeps": fate_job("sleep"),
    "has a name no handler answers to": lambda: enqueue_from_sql(
        "jobtests.fates.not_deployed", '{"kind": "return"}'
    ),
    "has a payload Python cannot read": lambda: enqueue_from_sql(
        fate.name, '{"kind": ' + "7" * 5000 + "}"
    ),
    "has a payload that no longer fits": lambda: enqueue_from_sql(
        fate.name, '{"kind": "return", "removed_argument": 1}'
    ),
    "a task returns": fate_task_job("return"),
    "a task raises an Exception": fate_task_job("raise"),
    "a task raises SystemExit": fate_task_job("system_exit"),
    "a task raises KeyboardInterrupt": fate_task_job("keyboard_interrupt"),
    "a task times out": fate_task_job("timeout"),
    "a task is canceled": fate_task_job("cancel"),
}

RUNNER = re.compile(r"registered in (worker [^\s;]+|run_jobs)")
JOB_ID = re.compile(r"#\d+")


def _first_clause(error: dict[str, Any] | None) -> tuple[str, str] | None:
    """The error's type and what happened (the message up to its first
    "; ", which goes on to say what the runner does about it), with the
    runner's name and the job's id taken out."""
    if error is None:
        return None
    message = RUNNER.sub("registered in <runner>", error["message"])
    message = JOB_ID.sub("#<id>", message).split("; ")[0]
    return error["type"], message


def stored(job_id: int, spans_file: str) -> dict[str, Any]:
    """What the database holds about how ``job_id`` ran, the hook calls it
    made and the spans it opened."""
    outcome = JobOutcome.objects.get(job_id=job_id)
    attempts = AttemptHistory.objects.filter(job_id=job_id).order_by("attempt", "started_at")
    signals = RunRecord.objects.filter(job_id=job_id, label__startswith="signal:").order_by("id")
    return {
        "state": outcome.state,
        "attempts": outcome.attempts,
        "result": outcome.result,
        "error": _first_clause(outcome.error),
        "history": [(a.attempt, a.outcome, _first_clause(a.error)) for a in attempts],
        "signals": [s.label for s in signals],
        "hooks": sorted(
            FailureCall.objects.filter(job_id=job_id).values_list(
                "hook", "attempt", "will_retry", "timed_out", "exception_type"
            )
        ),
        "spans": spans.read(spans_file, job_id),
    }


def ended(job_id: int) -> bool:
    """The job is terminal and every task run sent its ``task_finished`` (a
    timed-out task sends it once its abandoned handler returns). A job
    waiting for its retry or wake time is promoted: the worker would wait
    for its backoff, ``run_jobs`` skips it."""
    if not JobOutcome.objects.filter(job_id=job_id).exists():
        workhorse.Admin().promote(job_id)
        return False
    records = RunRecord.objects.filter(job_id=job_id)
    started = records.filter(label__startswith="signal:started:").count()
    return records.filter(label__startswith="signal:finished:").count() == started


@pytest.mark.parametrize("ending", ENDINGS)
def test_a_run_is_stored_the_same_under_run_jobs_as_under_runworker(
    ending, start_worker, wait_until, tmp_path
):
    enqueue = ENDINGS[ending]
    spans_file = str(tmp_path / "spans.jsonl")

    in_process = enqueue()
    spans.record_to(spans_file)
    with override_settings(WORKHORSE={**django_settings.WORKHORSE, **HOOKS}):
        run_jobs(queues=[QUEUE, TASK_QUEUE])
    under_run_jobs = stored(in_process, spans_file)

    in_worker = enqueue()
    worker = start_worker(
        "--queues", f"{QUEUE},{TASK_QUEUE}", settings=HOOKS, env={spans.ENV: spans_file}
    )
    wait_until(lambda: ended(in_worker), timeout=60, what=f"job {in_worker} ended")
    # An abandoned handler (past its timeout) ends its span when it returns.
    opened = len(under_run_jobs["spans"])
    wait_until(
        lambda: len(spans.read(spans_file, in_worker)) >= opened,
        timeout=30,
        what=f"the spans of job {in_worker} ended",
    )
    assert worker.stop() == 0, worker.stderr  # its hook calls are made by then
    under_runworker = stored(in_worker, spans_file)

    assert under_run_jobs == under_runworker
    if ending.startswith(("raises", "a task raises", "times out", "a task times out")):
        assert under_runworker["hooks"], "the failure hook was called"
    if ending in ("is canceled", "a task is canceled"):
        assert under_runworker["hooks"][0][0] == "record_canceled"
    if not ending.startswith("has a"):
        assert under_runworker["spans"], "the handler ran in a span"
