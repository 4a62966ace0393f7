"""The claim loop looks the next scheduled run_at up once per empty claim,
not on every wait: with one slot it waits once per job, and that lookup was
a round trip per job. A job scheduled while the loop believes nothing is
scheduled still runs at its time (its enqueue's NOTIFY says when)."""

from __future__ import annotations

from django_workhorse import store
from django_workhorse.worker import worker as worker_module
from tests.helpers import poll_until
from tests.worker import jobs
from tests.worker.conftest import IN_PROCESS

pytestmark = IN_PROCESS


def succeeded(cursor, ids: list[int]) -> int:
    cursor.execute(
        "SELECT count(*) FROM workhorse_job_outcome WHERE state = 'succeeded' AND job_id = ANY(%s)",
        [ids],
    )
    return cursor.fetchone()[0]


def test_a_one_slot_drain_does_not_look_up_the_next_run_at_per_job(
    start_worker, cursor, monkeypatch
):
    lookups = []
    real = store.next_run_at

    def counted(cursor, queues):
        lookups.append(queues)
        return real(cursor, queues)

    monkeypatch.setattr(worker_module.store, "next_run_at", counted)
    ids = [jobs.gated.enqueue(value=n).id for n in range(40)]

    start_worker({"inproc.gated": 1})
    poll_until(
        lambda: succeeded(cursor, ids) == len(ids), timeout=60, interval=0.05, what="the drain"
    )

    assert len(lookups) <= 5, f"{len(lookups)} lookups for {len(ids)} jobs"


def test_a_job_scheduled_after_the_lookup_runs_at_its_time(start_worker, cursor):
    running = start_worker({"inproc.gated": 1})
    poll_until(
        lambda: running.ledger.due_known, timeout=30, interval=0.02, what="the first idle lookup"
    )

    job_id = jobs.gated.options(delay=0.5).enqueue(value=1).id

    poll_until(
        lambda: succeeded(cursor, [job_id]) == 1,
        timeout=30,
        interval=0.02,
        what="the scheduled job",
    )
