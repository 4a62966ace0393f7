"""The writer's batch locks its runtime rows in job_id order, as a whole.

A batch of successes, failures and sleeps is one transaction of up to three
calls. Each call locks its own jobs in job_id order, but one after the
other they did not: a success of job 2 locked job 2, then the failure of
job 1 waited for job 1. The heartbeat (which renews the runs waiting for
the writer) and an idle worker's look-up of the next run_at lock in job_id
order; holding job 1 and asking for job 2, either closed a deadlock with
the writer. PostgreSQL broke it by aborting one side: the heartbeat (leases
left to expire, the jobs recovered and run again) or the writer's batch.
"""

from __future__ import annotations

import threading

import psycopg

from django_workhorse.db import store
from django_workhorse.worker.connection import connect
from django_workhorse.worker.execution import Finished
from django_workhorse.worker.hookcalls import HookCalls
from django_workhorse.worker.writer import Writer
from tests.helpers import poll_until
from tests.worker import jobs
from tests.worker.conftest import IN_PROCESS
from tests.worker.runs import run_of

pytestmark = IN_PROCESS

OWNER = "lock-order-worker"
LOCK_ROW = "SELECT 1 FROM workhorse_job_runtime WHERE job_id = %s FOR NO KEY UPDATE"
"""The lock the heartbeat takes on each run it renews."""


def writer_waits_for_a_lock(cursor: psycopg.Cursor) -> bool:
    cursor.execute(
        "SELECT 1 FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name = 'workhorse-writer' AND wait_event_type = 'Lock'"
    )
    return cursor.fetchone() is not None


def test_a_mixed_batch_does_not_deadlock_with_a_renewal_in_job_id_order(cursor):
    first, second = (jobs.gated.enqueue(value=n).id for n in range(2))
    claimer = connect("default", application_name="lock-order-claims")
    renewer = psycopg.connect(claimer.info.dsn)  # a transaction, as the heartbeat's call is
    watcher = connect("default", application_name="lock-order-watcher")
    with claimer.cursor() as claim_cursor:
        claimed = {
            j.job_id: j for j in store.claim_many(claim_cursor, OWNER, ["inproc.gated"], [2], 30)
        }
    assert sorted(claimed) == [first, second]
    # The higher id succeeds, the lower one fails: the success is written
    # first (succeed_many, then fail_many), so without one lock of the
    # whole batch the writer holds job 2 while it waits for job 1.
    batch = [
        Finished(run_of(claimed[second], OWNER), True, 2),
        Finished(run_of(claimed[first], OWNER), False, error=RuntimeError("boom"), retryable=False),
    ]
    writer = Writer(
        hooks=HookCalls(),
        alias="default",
        hook=None,
        in_flight=lambda: 0,
        on_written=lambda runs: None,
        on_error=lambda exc: None,
        give_up=threading.Event(),
    )
    errors: list[BaseException] = []

    def write() -> None:
        try:
            writer._write(OWNER, batch)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=write)
    try:
        with renewer.cursor() as renew:
            renew.execute(LOCK_ROW, [first])  # the renewal holds job 1 ...
            thread.start()
            with watcher.cursor() as watch:
                poll_until(
                    lambda: writer_waits_for_a_lock(watch),
                    timeout=10,
                    interval=0.01,
                    what="the writer to wait for job 1",
                )
            # ... and asks for job 2. With the writer holding job 2, one of
            # the two is aborted as a deadlock once deadlock_timeout passes.
            renew.execute(LOCK_ROW, [second])
            renewer.commit()
        thread.join(30)
        assert not thread.is_alive()
    finally:
        renewer.close()
        watcher.close()
        claimer.close()
        writer._close()
    assert errors == []
    cursor.execute(
        "SELECT job_id, state FROM workhorse_job_outcome WHERE job_id = ANY (%s) ORDER BY job_id",
        [[first, second]],
    )
    assert cursor.fetchall() == [(first, "failed"), (second, "succeeded")]
