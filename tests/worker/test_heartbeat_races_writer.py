"""A heartbeat racing the writer's success never reports a lost lease.

The heartbeat renews the leases of runs whose result waits for the writer.
When the writer's success commits first, the renewal is refused (the job is
finished, not taken): that refusal must not be reported as a lost lease.
These tests drive exactly that interleaving, many times: the heartbeat
renews from inside the writer's ``on_written``, after the success committed
and before the ledger heard of it.
"""

from __future__ import annotations

import threading

import pytest

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
from tests.worker.runs import run_of

pytestmark = IN_PROCESS

ROUNDS = 40
JOBS_PER_ROUND = 5


@pytest.mark.parametrize("owner", ["race-worker"])
def test_a_renewal_refused_because_the_success_committed_is_not_a_lost_lease(owner, cursor):
    reported: list[Running] = []
    refusals: list[int] = []
    written: list[Running] = []
    done = threading.Event()

    def on_lost(job_id: int, fence: int, owner: str) -> None:
        refusals.append(job_id)
        run = ledger.lost(job_id, fence, owner)
        if run is not None:
            reported.append(run)

    heartbeat = Heartbeat(
        alias="default",
        lease_seconds=30,
        renew_interval=3600,
        stalled_interval=3600,
        partition_days_ahead=1,
        in_flight=lambda: ledger.leases(),
        on_lost=on_lost,
        on_cancel=lambda job_id, fence, owner: None,
        on_recovered=lambda recovered: None,
    )

    def on_written(runs: list[Running]) -> None:
        # The successes have committed; the ledger still counts the runs as
        # waiting for the writer. The heartbeat renews now.
        heartbeat.renew()
        ledger.written(runs)
        written.extend(runs)
        if len(written) == ROUNDS * JOBS_PER_ROUND:
            done.set()

    writer = Writer(
        hooks=HookCalls(),
        alias="default",
        hook=None,
        in_flight=lambda: ledger.running_count(),
        on_written=on_written,
        on_error=lambda exc: done.set(),
        give_up=threading.Event(),
    )
    ledger = Ledger({"inproc.gated": JOBS_PER_ROUND}, hand_over=writer.put)
    writer.start()
    claimer = connect("default", application_name="race-claims")
    try:
        for _ in range(ROUNDS):
            ids = [jobs.gated.enqueue(value=n).id for n in range(JOBS_PER_ROUND)]
            with claimer.cursor() as claim_cursor:
                claimed = store.claim_many(
                    claim_cursor, owner, ["inproc.gated"], [JOBS_PER_ROUND], 30
                )
            assert sorted(j.job_id for j in claimed) == sorted(ids)
            runs = [run_of(job, owner) for job in claimed]
            for run in runs:
                ledger.start(run)
            for run in runs:
                ledger.finish(Finished(run, True, run.job.job_id))
            poll_until(
                lambda: ledger.counts()["writing"] == 0,
                timeout=30,
                interval=0.005,
                what="the round to be written",
            )
        assert done.wait(30)
    finally:
        writer.stop()
        claimer.close()
        heartbeat._close()
    cursor.execute(
        "SELECT count(*) FROM workhorse_job_outcome o JOIN workhorse_job j ON j.id = o.job_id"
        " WHERE j.queue = 'inproc.gated' AND o.state = 'succeeded'"
    )
    assert cursor.fetchone()[0] == ROUNDS * JOBS_PER_ROUND
    assert len(refusals) >= ROUNDS * JOBS_PER_ROUND  # the race happened every time
    assert reported == []
    assert ledger.counts() == {"running": 0, "writing": 0, "holding": 0, "busy": 0}
