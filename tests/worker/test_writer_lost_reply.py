"""A write whose reply is lost after it committed is not a lost lease.

The writer writes a batch again on a new connection when its call fails on
the connection. That is safe when nothing of the call committed; but a
connection can also die after the server committed the call and before its
reply arrived (a server restart, a network cut at that moment). The fenced
write made again is then refused, as it must be: the run's own first write
already took the job. The writer used to report that refusal as a lost lease
(``lease lost ...; its failure was refused, another run owns the job``) and
skipped ``ON_JOB_FAILURE`` for a failure that was recorded (and the log
line of a sleep that was).
"""

from __future__ import annotations

import logging
import threading

import psycopg
import pytest

from django_workhorse.context import SleepRequested
from django_workhorse.core.hooks import JobFailure
from django_workhorse.db import store
from django_workhorse.worker.connection import connect
from django_workhorse.worker.execution import Finished
from django_workhorse.worker.hookcalls import HookCalls
from django_workhorse.worker.writer import Writer
from tests.worker import jobs
from tests.worker.conftest import IN_PROCESS
from tests.worker.runs import run_of

pytestmark = IN_PROCESS

OWNER = "lost-reply-worker"


def reply_lost_once(real, writer: Writer):
    """``real``, whose first call commits and then loses its connection."""
    calls = []

    def call(cursor, *args, **kwargs):
        result = real(cursor, *args, **kwargs)
        if not calls:
            calls.append(1)
            assert writer._shared.conn is not None
            writer._shared.conn.close()
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        return result

    return call


@pytest.mark.parametrize("outcome", ["success", "failure", "retry", "sleep"])
def test_a_write_committed_before_its_reply_was_lost_is_not_reported_lost(
    outcome, monkeypatch, caplog, cursor
):
    job_id = jobs.gated.options(max_attempts=2 if outcome == "retry" else 1).enqueue().id
    with (
        connect("default", application_name="lost-reply-claims") as claimer,
        claimer.cursor() as claim_cursor,
    ):
        (claimed,) = store.claim_many(claim_cursor, OWNER, ["inproc.gated"], [1], 30)
    hooked: list[JobFailure] = []
    hooks = HookCalls()
    hooks.start()
    writer = Writer(
        hooks=hooks,
        alias="default",
        hook=hooked.append,
        in_flight=lambda: 0,
        on_written=lambda runs: None,
        on_error=lambda exc: None,
        give_up=threading.Event(),
    )
    if outcome == "success":
        item = Finished(run_of(claimed, OWNER), True, 7)
        monkeypatch.setattr(store, "succeed_many", reply_lost_once(store.succeed_many, writer))
    elif outcome == "sleep":
        item = Finished(run_of(claimed, OWNER), False, error=SleepRequested("nap", None, 60))
        monkeypatch.setattr(store, "sleep_many", reply_lost_once(store.sleep_many, writer))
    else:
        item = Finished(run_of(claimed, OWNER), False, error=RuntimeError("boom"), retryable=True)
        monkeypatch.setattr(store, "fail_many", reply_lost_once(store.fail_many, writer))
    caplog.set_level(logging.INFO, logger="django_workhorse.worker")
    writer.start()
    writer.put(item)
    writer.stop()  # once what was handed over is written
    writer.join(10)
    hooks.stop()  # once the hook calls handed over have run
    assert "written again" in caplog.text
    assert "lease lost" not in caplog.text
    if outcome == "success":
        cursor.execute("SELECT state FROM workhorse_job_outcome WHERE job_id = %s", [job_id])
        assert cursor.fetchone() == ("succeeded",)
        assert hooked == []
    elif outcome == "sleep":
        cursor.execute("SELECT state FROM workhorse_job_runtime WHERE job_id = %s", [job_id])
        assert cursor.fetchone() == ("scheduled",)
        assert f"#{job_id} sleeps ('nap') until" in caplog.text
    else:
        assert [(h.job_id, h.will_retry) for h in hooked] == [(job_id, outcome == "retry")]
