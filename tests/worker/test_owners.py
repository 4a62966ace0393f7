"""Runs claimed under two owner names (the claim connection was replaced in
between) are renewed and written each under its own name, in one batch."""

from __future__ import annotations

import threading

from django_workhorse.context import JobContext
from django_workhorse.db import store
from django_workhorse.worker.connection import connect
from django_workhorse.worker.execution import Finished, Running
from django_workhorse.worker.heartbeat import Heartbeat
from django_workhorse.worker.hookcalls import HookCalls
from django_workhorse.worker.ledger import Ledger
from django_workhorse.worker.writer import Writer
from tests.helpers import poll_until
from tests.worker import jobs
from tests.worker.conftest import IN_PROCESS

pytestmark = IN_PROCESS


def claim(owner: str, count: int) -> list[Running]:
    with connect("default") as conn, conn.cursor() as cursor:
        claimed = store.claim_many(cursor, owner, ["inproc.gated"], [count], 30)
    return [
        Running(
            job,
            jobs.gated,
            JobContext(
                job_id=job.job_id,
                name=job.name,
                queue=job.queue,
                attempt=job.attempt,
                max_attempts=job.max_attempts,
            ),
            owner=owner,
        )
        for job in claimed
    ]


def test_a_batch_of_two_owners_is_renewed_and_written_under_each_owner(cursor):
    for n in range(4):
        jobs.gated.enqueue(value=n)
    runs = claim("owner-w", 2) + claim("owner-w+1", 2)
    lost: list[int] = []
    writer = Writer(
        hooks=HookCalls(),
        alias="default",
        hook=None,
        in_flight=lambda: 0,
        on_written=lambda done: ledger.written(done),
        on_error=lambda exc: None,
        give_up=threading.Event(),
    )
    ledger = Ledger({"inproc.gated": 4}, hand_over=writer.put)
    for run in runs:
        ledger.start(run)
    heartbeat = Heartbeat(
        alias="default",
        lease_seconds=60,
        renew_interval=3600,
        stalled_interval=3600,
        partition_days_ahead=1,
        in_flight=ledger.leases,
        on_lost=lambda job_id, fence, owner: lost.append(job_id),
        on_cancel=lambda job_id, fence, owner: None,
        on_recovered=lambda recovered: None,
    )
    try:
        heartbeat.renew()
    finally:
        heartbeat._close()
    assert lost == []
    for run in runs:
        ledger.finish(Finished(run, True, run.job.job_id))
    writer.start()
    try:
        poll_until(
            lambda: ledger.counts()["writing"] == 0,
            timeout=30,
            interval=0.01,
            what="the batch to be written",
        )
    finally:
        writer.stop()
    cursor.execute(
        "SELECT worker_id, count(*) FROM workhorse_attempt_history"
        " WHERE outcome = 'succeeded' AND job_id = ANY(%s) GROUP BY worker_id ORDER BY 1",
        [[r.job.job_id for r in runs]],
    )
    assert cursor.fetchall() == [("owner-w", 2), ("owner-w+1", 2)]


def test_a_refused_renewal_under_an_earlier_owner_is_not_a_loss_of_the_new_run():
    """After a claim lost in a crash, the same job can be claimed again with
    the same fence under the next owner name: the old run's refusal names the
    old owner and leaves the new run's lease alone."""
    jobs.gated.enqueue(value=1)
    (run,) = claim("owner-x+1", 1)
    ledger = Ledger({"inproc.gated": 1}, hand_over=lambda item: None)
    ledger.start(run)

    assert ledger.lost(run.job.job_id, run.job.fence, "owner-x") is None
    assert not run.lease_lost
    assert ledger.lost(run.job.job_id, run.job.fence, "owner-x+1") is run
