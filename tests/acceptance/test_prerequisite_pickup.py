"""A prerequisite is picked up at once even while a dependent's enqueue holds it.

Enqueueing a job that ``depends_on`` a live prerequisite locks the
prerequisite's runtime row (FOR KEY SHARE) until that transaction commits,
so that the prerequisite cannot end unseen by the new edge. The claim locks
the rows it picks FOR NO KEY UPDATE, which that lock does not block: the
prerequisite is claimed, not skipped. Skipped, it waited for the next poll,
since the dependent's commit wakes nobody (a blocked job notifies no queue).
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db import transaction
from jobtests.jobs import record

from django_workhorse.models import AttemptHistory, Job, JobRuntime

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

PAIRS = 200
POLL_INTERVAL = 30
PICKUP_DEADLINE = timedelta(seconds=1)


def test_a_prerequisite_is_started_at_once_while_its_dependent_is_being_enqueued(
    start_worker, wait_until
):
    worker = start_worker(
        "--queues",
        record.queue,
        settings={"POLL_INTERVAL": POLL_INTERVAL},
        persistent_connections=True,
    )
    prerequisites = []
    for i in range(PAIRS):
        prerequisite = record.enqueue(label=f"prerequisite {i}")  # committed: NOTIFY sent
        with transaction.atomic():
            record.options(depends_on=[prerequisite.id]).enqueue(label=f"dependent {i}")
            # The worker, woken by the prerequisite's commit, claims while
            # this transaction holds the prerequisite's row.
            time.sleep(0.02)
        prerequisites.append(prerequisite.id)
        # One pair at a time: a later pair's NOTIFY must not be what wakes
        # the worker for this one. Past the deadline it waits for the poll.
        deadline = time.monotonic() + 3
        while JobRuntime.objects.filter(job_id=prerequisite.id, state="ready").exists():
            assert time.monotonic() < deadline, (
                f"pair {i}: prerequisite #{prerequisite.id} not started within 3 s (it waits "
                f"for the {POLL_INTERVAL} s poll)\n{worker.tail()}"
            )
            time.sleep(0.01)

    wait_until(
        lambda: AttemptHistory.objects.filter(job_id__in=prerequisites).count() == PAIRS,
        timeout=60,
        what="every prerequisite's attempt closed",
    )
    created = dict(Job.objects.filter(id__in=prerequisites).values_list("id", "created_at"))
    late = [
        (a.job_id, a.started_at - created[a.job_id])
        for a in AttemptHistory.objects.filter(job_id__in=prerequisites)
        if a.started_at - created[a.job_id] > PICKUP_DEADLINE
    ]
    assert late == [], f"prerequisites started more than {PICKUP_DEADLINE} after their enqueue"
    assert worker.stop() == 0
