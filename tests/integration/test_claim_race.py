"""The claim hands the worker every job it claimed, also one committed
while the claim was starting, with what tracing and metrics need about it.

The claim reads with a snapshot taken after the calling statement's. Here
the claim is held at its first read of ``workhorse_queue`` (another session
holds a lock on it) after the calling statement began; a job is committed
meanwhile; then the lock goes. The claim sees and claims the job, and must
return it with its enqueue details, not drop it (a join in the calling
statement, whose snapshot is older, would).
"""

from __future__ import annotations

import threading

import pytest

from django_workhorse.db import store
from tests.factories import ReadyJobFactory
from tests.helpers import poll_until

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


def test_a_job_committed_while_the_claim_starts_is_handed_to_the_worker(pg_connect):
    blocker, worker = pg_connect(), pg_connect()
    blocker.execute("BEGIN")
    blocker.execute("LOCK TABLE workhorse_queue IN ACCESS EXCLUSIVE MODE")
    claimed: list = []

    def claim() -> None:
        with worker.cursor() as cursor:
            claimed.append(store.claim_many(cursor, "w-race", ["race"], [10], 30))

    thread = threading.Thread(target=claim)
    thread.start()
    poll_until(
        lambda: (
            blocker.execute(
                "SELECT count(*) FROM pg_locks"
                " WHERE NOT granted AND relation = 'workhorse_queue'::regclass"
            ).fetchone()[0]
            == 1
        ),
        timeout=10,
        interval=0.02,
        what="the claim waiting for the lock",
    )
    job = ReadyJobFactory(queue="race")
    blocker.execute("COMMIT")
    thread.join(30)

    (jobs,) = claimed
    assert [j.job_id for j in jobs] == [job.id]
    assert jobs[0].waited is not None and jobs[0].pickup is not None
