"""Chaos: workers are killed, frozen, stopped and cut off while they drain.

Whatever happens to them, every job ends succeeded with exactly one recorded
success, and nothing is left running. Handlers may run more than once (a
killed or frozen worker's jobs run again elsewhere): at-least-once, never
zero times and never recorded twice.

``WORKHORSE_SOAK_ROUNDS`` sets the number of chaos actions (default 6, about
half a minute here); ``make soak`` runs a long version.
``WORKHORSE_SOAK_SEED`` replays a run: the seed is printed when it fails.
"""

from __future__ import annotations

import os
import random
import signal
import time

import pytest
from django.db import connection
from django.db.models import Count
from jobtests.jobs import sleep
from jobtests.models import RunRecord

from django_workhorse.models import AttemptHistory, JobOutcome, JobRuntime
from tests.helpers import cut_connections, timeline_events

pytestmark = [
    pytest.mark.soak,
    pytest.mark.django_db(transaction=True, available_apps=["django_workhorse", "jobtests"]),
]

ROUNDS = int(os.environ.get("WORKHORSE_SOAK_ROUNDS", "6"))
JOBS = max(300, 60 * ROUNDS)
FLAGS = ("--queues", "jobtests.sleep", "--concurrency", "4")
SETTINGS = {
    "LOCK_DURATION": 2,
    "LOCK_RENEW_INTERVAL": 0.5,
    "STALLED_INTERVAL": 0.5,
    "SHUTDOWN_GRACE": 1,
    "POLL_INTERVAL": 1,
}
CONNECTIONS = ("workhorse-worker", "workhorse-heartbeat", "workhorse-listener")


def test_jobs_survive_killed_frozen_stopped_and_cut_off_workers(start_worker, wait_until):
    seed = int(os.environ.get("WORKHORSE_SOAK_SEED", time.time_ns() % 1_000_000))
    rng = random.Random(seed)
    print(f"chaos seed {seed} (WORKHORSE_SOAK_SEED={seed} replays it), {ROUNDS} rounds")
    # Enough stalls allowed that no job fails from the chaos itself.
    ids = [
        h.id
        for h in sleep.options(max_stalled=1000).enqueue_many(
            [{"seconds": 0.15, "label": str(i)} for i in range(JOBS)]
        )
    ]

    def start(name: str):
        return start_worker(*FLAGS, name=name, settings=SETTINGS, persistent_connections=True)

    fleet = [start(f"w{i}") for i in range(3)]
    spawned = len(fleet)
    actions: list[str] = []
    for _ in range(ROUNDS):
        time.sleep(rng.uniform(0.3, 1.0))
        action = rng.choice(["kill", "freeze", "term", "cut"])
        index = rng.randrange(len(fleet))
        victim = fleet[index]
        actions.append(f"{action} {victim.name}")
        if action == "kill":
            victim.kill()
        elif action == "freeze":
            victim.send(signal.SIGSTOP)
            time.sleep(SETTINGS["LOCK_DURATION"] + 0.5)  # past its leases
            victim.send(signal.SIGCONT)
            continue
        elif action == "term":
            assert victim.stop(timeout=15) == 0, f"{actions}\n{victim.stderr}"
        else:
            cut_connections(rng.choice(CONNECTIONS))
            continue
        fleet[index] = start(f"w{spawned}")
        spawned += 1

    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=ids).count() == JOBS,
        timeout=240,
        what=f"all {JOBS} jobs terminal after {actions} (seed {seed})",
    )
    for worker in fleet:
        assert worker.stop(timeout=15) == 0, f"{actions}\n{worker.stderr}"

    outcomes = JobOutcome.objects.filter(job_id__in=ids)
    assert set(outcomes.values_list("state", flat=True)) == {"succeeded"}, (seed, actions)
    assert not JobRuntime.objects.filter(job_id__in=ids).exists()
    successes = AttemptHistory.objects.filter(job_id__in=ids, outcome="succeeded")
    assert successes.count() == JOBS
    assert not successes.values("job_id").annotate(n=Count("id")).filter(n__gt=1).exists()
    with connection.cursor() as cursor:
        assert len(timeline_events(cursor, ids, "succeeded")) == JOBS
    ran = set(RunRecord.objects.filter(job_id__in=ids).values_list("job_id", flat=True))
    runs = RunRecord.objects.filter(job_id__in=ids).count()
    kinds = [a.split()[0] for a in actions]
    print(
        f"chaos: jobs {JOBS}, kills {kinds.count('kill')}, freezes {kinds.count('freeze')}, "
        f"sigterms {kinds.count('term')}, connection cuts {kinds.count('cut')}, "
        f"duplicate handler runs {runs - len(ran)}"
    )
    assert ran == set(ids)
