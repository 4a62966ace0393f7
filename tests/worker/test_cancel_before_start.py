"""A cancel whose notification reaches the worker after the claim of its job
committed but before the claim loop started the run (it hands each claimed
job to its slot one after the other) stops the run at once, as any other
notified cancel does, not at the next heartbeat."""

from __future__ import annotations

import threading
import uuid

import psycopg

from django_workhorse.worker.worker import Worker
from tests.helpers import poll_until
from tests.worker import jobs
from tests.worker.conftest import IN_PROCESS

pytestmark = IN_PROCESS

NO_HEARTBEAT_IN_TIME = {"LOCK_DURATION": 600, "LOCK_RENEW_INTERVAL": 300}
"""The first heartbeat comes five minutes after the start: a cancel seen
within the test's wait came by notification."""


def state_of(cursor, job_id: int) -> str | None:
    cursor.execute(
        "SELECT coalesce((SELECT state FROM workhorse_job_runtime WHERE job_id = %s),"
        " (SELECT state FROM workhorse_job_outcome WHERE job_id = %s))",
        [job_id, job_id],
    )
    return cursor.fetchone()[0]


def test_a_cancel_heard_between_the_claim_and_the_start_of_its_run_stops_the_run(
    start_worker, cursor, pg_connect, monkeypatch
):
    hold = f"gate-{uuid.uuid4().hex[:8]}"
    job_id = jobs.gated.enqueue(gate_name=hold, value=1).id
    heard = threading.Event()
    operator: psycopg.Connection = pg_connect()
    notified, start = Worker._cancel_notified, Worker._start

    def cancel_notified(self, cancel_id, fence, owner):
        notified(self, cancel_id, fence, owner)
        if cancel_id == job_id:
            heard.set()

    def start_after_the_cancel_was_heard(self, job, owner, definition, now):
        if job.job_id == job_id and not heard.is_set():
            (status,) = operator.execute(
                "SELECT status FROM workhorse_cancel_v1(%s, 'early')", [job_id]
            ).fetchone()
            assert status == "requested"
            assert heard.wait(30), "the cancel's notification never arrived"
        return start(self, job, owner, definition, now)

    monkeypatch.setattr(Worker, "_cancel_notified", cancel_notified)
    monkeypatch.setattr(Worker, "_start", start_after_the_cancel_was_heard)
    running = start_worker({"inproc.gated": 1}, **NO_HEARTBEAT_IN_TIME)

    poll_until(
        lambda: state_of(cursor, job_id) == "canceled",
        timeout=30,
        interval=0.01,
        what="the run to be acked canceled",
    )
    jobs.gate(hold).set()
    running.stop()
    cursor.execute("SELECT outcome FROM workhorse_attempt_history WHERE job_id = %s", [job_id])
    assert cursor.fetchall() == [("canceled",)]
