"""Chaos: operator actions race workers that drain, fail, sleep and die.

Three workers drain a mix of jobs (checkpoints, durable sleeps, retries,
dependencies, idempotency keys, sync and async handlers that run a while)
while the test cancels, retries and promotes jobs at random, pauses and
resumes queues, and now and then kills or freezes a worker. Afterwards
the promises of docs/admin.md and docs/concepts.md hold:

- every job has one runtime row or one outcome row, and once the fleet is
  idle none is left live;
- a cancel that said ``changed`` ends the job ``canceled``; one that said
  ``requested`` ends it canceled, succeeded or failed, and no run of the job
  starts after it (unless an operator retried the job later);
- every canceled job's error names ``JobCanceledError``;
- no attempt number exceeds ``max_attempts``;
- no run of a queue starts while the queue is paused;
- a queue's concurrency limit is never exceeded (sampled while it runs).

``WORKHORSE_SOAK_ROUNDS`` scales the number of operator actions (default 6:
about 150 actions, half a minute here); ``WORKHORSE_SOAK_SEED`` replays a run.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import defaultdict
from datetime import datetime
from typing import Any

import psycopg
import pytest
from django.db import connection
from jobtests import durable_jobs, jobs

import django_workhorse as workhorse
from tests.acceptance.conftest import database_url

pytestmark = [
    pytest.mark.soak,
    pytest.mark.django_db(transaction=True, available_apps=["django_workhorse", "jobtests"]),
]

ROUNDS = int(os.environ.get("WORKHORSE_SOAK_ROUNDS", "6"))
ACTIONS = 25 * ROUNDS
QUEUES = [
    "jobtests.cancel",
    "jobtests.flaky",
    "jobtests.doomed",
    "jobtests.nap",
    "jobtests.asyncnap",
    "jobtests.staged",
    "jobtests.record",
    "jobtests.gather",
]
LIMITS = {"jobtests.cancel": 2, "jobtests.nap": 1}
"""Concurrency limits set before the workers start and never changed."""
SETTINGS = {
    "LOCK_DURATION": 2,
    "LOCK_RENEW_INTERVAL": 0.5,
    "STALLED_INTERVAL": 0.5,
    "SHUTDOWN_GRACE": 1,
    "POLL_INTERVAL": 1,
}
CANCELLED = "django_workhorse.exceptions.JobCancelled"


def enqueue_one(rng: random.Random, known: list[int]) -> int:
    """One job of a random kind; dependents name earlier jobs."""
    kind = rng.choice(
        ["checks", "stuck", "async", "flaky", "doomed", "nap", "anap", "staged", "delayed", "key"]
        + ["gather"] * 2
    )
    if kind == "checks":
        return jobs.checks_for_cancel.enqueue(seconds=rng.uniform(0.1, 2)).id
    if kind == "stuck":
        return jobs.stuck.enqueue(seconds=rng.uniform(0.1, 1.5)).id
    if kind == "async":
        return jobs.async_stuck.enqueue(seconds=rng.uniform(0.1, 1)).id
    if kind == "flaky":
        return jobs.flaky.enqueue(failures=rng.randint(0, 5)).id
    if kind == "doomed":
        return jobs.doomed.enqueue().id
    if kind == "nap":
        return durable_jobs.nap.enqueue(seconds=rng.uniform(0.1, 1)).id
    if kind == "anap":
        return durable_jobs.async_nap.enqueue(seconds=rng.uniform(0.1, 1)).id
    if kind == "staged":
        return durable_jobs.staged.enqueue(hold=rng.uniform(0.05, 0.5)).id
    if kind == "delayed":
        return jobs.record.options(delay=rng.uniform(0.5, 3)).enqueue(label="delayed").id
    if kind == "key":
        key = f"key-{rng.randrange(10)}"
        return jobs.record.options(idempotency_key=key).enqueue(label="keyed").id
    prerequisites = rng.sample(known, k=min(len(known), rng.randint(1, 3)))
    policy = rng.choice(["all_succeeded", "all_finished", "any_succeeded"])
    return (
        jobs.gather.options(depends_on=prerequisites, dependency_policy=policy)
        .enqueue(label="dependent")
        .id
    )


def pick(rng: random.Random, where: str) -> int | None:
    """A random job of those ``where`` selects (a clause over its table)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT job_id FROM {where} ORDER BY random() LIMIT 1")
        row = cursor.fetchone()
    return row[0] if row else None


def db_now() -> datetime:
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        return cursor.fetchone()[0]


def test_operator_actions_racing_workers_keep_the_documented_promises(workers, wait_until):
    seed = int(os.environ.get("WORKHORSE_SOAK_SEED", time.time_ns() % 1_000_000))
    rng = random.Random(seed)
    print(f"operator chaos seed {seed} (WORKHORSE_SOAK_SEED={seed} replays it), {ACTIONS} actions")
    admin = workhorse.Admin()
    for queue, limit in LIMITS.items():
        admin.set_queue_limits(queue, global_concurrency=limit)
    ids: list[int] = []
    for _ in range(60):
        ids.append(enqueue_one(rng, ids))

    def start(name: str) -> Any:
        return workers.start(
            "--queues", ",".join(QUEUES), "--concurrency", "2", name=name, settings=SETTINGS
        )

    fleet = [start(f"w{i}") for i in range(3)]
    spawned = len(fleet)

    over_limit: list[str] = []
    done = threading.Event()

    def sample_limits() -> None:
        with psycopg.connect(database_url(), autocommit=True) as conn:
            while not done.is_set():
                for queue, active in conn.execute(
                    "SELECT queue, count(*) FROM workhorse_job_runtime WHERE state = 'active'"
                    " AND queue = ANY (%s) GROUP BY queue",
                    [list(LIMITS)],
                ).fetchall():
                    if active > LIMITS[queue]:
                        over_limit.append(f"{queue}: {active} active")
                time.sleep(0.02)

    sampler = threading.Thread(target=sample_limits, daemon=True)
    sampler.start()

    log: list[tuple[datetime, str, int, str]] = []  # (after, action, job, status)
    paused: dict[str, datetime] = {}
    windows: list[tuple[str, datetime, datetime]] = []
    counts: dict[str, int] = defaultdict(int)
    for _ in range(ACTIONS):
        r = rng.random()
        if r < 0.35:
            job = pick(rng, "workhorse_job_runtime WHERE random() < 0.5 OR state = 'active'")
            if job is not None:
                status = admin.cancel(job, reason="chaos").status
                log.append((db_now(), "cancel", job, status))
                counts[f"cancel {status}"] += 1
        elif r < 0.5:
            job = pick(rng, "workhorse_job_outcome WHERE state <> 'succeeded'")
            if job is not None:
                status = admin.retry(job).status
                log.append((db_now(), "retry", job, status))
                counts[f"retry {status}"] += 1
        elif r < 0.58:
            job = pick(rng, "workhorse_job_runtime WHERE state = 'scheduled'")
            if job is not None:
                counts[f"promote {admin.promote(job).status}"] += 1
        elif r < 0.64:
            queue = rng.choice(QUEUES)
            if queue in paused:
                resumed_before = db_now()
                admin.resume_queue(queue)
                windows.append((queue, paused.pop(queue), resumed_before))
                counts["resume"] += 1
            else:
                admin.pause_queue(queue)
                paused[queue] = db_now()
                counts["pause"] += 1
        elif r < 0.96:
            ids.append(enqueue_one(rng, ids))
            counts["enqueue"] += 1
        else:
            index = rng.randrange(len(fleet))
            victim = fleet[index]
            if rng.random() < 0.5:
                victim.kill()
                fleet[index] = start(f"w{spawned}")
                spawned += 1
                counts["kill"] += 1
            else:
                victim.send(signal.SIGSTOP)
                time.sleep(SETTINGS["LOCK_DURATION"] + 0.5)  # past its leases
                victim.send(signal.SIGCONT)
                counts["freeze"] += 1
        time.sleep(rng.uniform(0, 0.1))
    for queue, since in list(paused.items()):
        resumed_before = db_now()
        admin.resume_queue(queue)
        windows.append((queue, since, resumed_before))
    print(f"operator chaos: {len(ids)} jobs enqueued, {dict(counts)}")

    def idle() -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT NOT EXISTS (SELECT 1 FROM workhorse_job_runtime)")
            return cursor.fetchone()[0]

    wait_until(idle, timeout=180, what=f"every job ended (seed {seed})", interval=0.2)
    done.set()
    sampler.join(10)
    for worker in fleet:
        assert worker.stop(timeout=20) == 0, worker.stderr

    problems = list(over_limit)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT j.id, o.state, o.error ->> 'type', j.max_attempts, o.attempts,"
            " EXISTS (SELECT 1 FROM workhorse_job_runtime rt WHERE rt.job_id = j.id)"
            " FROM workhorse_job j LEFT JOIN workhorse_job_outcome o ON o.job_id = j.id"
        )
        final: dict[int, str | None] = {}
        for job, state, error_type, max_attempts, attempts, live in cursor.fetchall():
            final[job] = state
            if state is None or live:
                problems.append(f"#{job}: outcome {state}, runtime row {live}")
            if state == "canceled" and error_type != CANCELLED:
                problems.append(f"#{job}: canceled with an error of type {error_type}")
            if (attempts or 0) > max_attempts:
                problems.append(f"#{job}: {attempts} attempts of {max_attempts}")
        cursor.execute(
            "SELECT h.job_id, h.attempt FROM workhorse_attempt_history h"
            " JOIN workhorse_job j ON j.id = h.job_id WHERE h.attempt > j.max_attempts"
        )
        problems += [f"#{job}: attempt {attempt} recorded" for job, attempt in cursor.fetchall()]
        for queue, since, until in windows:
            cursor.execute(
                "SELECT h.job_id, h.started_at FROM workhorse_attempt_history h"
                " JOIN workhorse_job j ON j.id = h.job_id"
                " WHERE j.queue = %s AND h.started_at > %s AND h.started_at < %s",
                [queue, since, until],
            )
            problems += [f"#{job} of {queue} started {at} while paused" for job, at in cursor]
        for at, action, job, status in log:
            if action != "cancel" or status not in ("changed", "requested"):
                continue
            if any(a == "retry" and j == job and s == "changed" and t > at for t, a, j, s in log):
                continue  # an operator's retry gave the job a new life
            if status == "changed" and final[job] != "canceled":
                problems.append(f"#{job}: canceled at {at}, ended {final[job]}")
            if status == "requested":
                cursor.execute(
                    "SELECT count(*) FROM workhorse_job_timeline_v1(%s, p_limit => 100000)"
                    " WHERE source = 'event' AND kind = 'claimed' AND at > %s",
                    [job, at],
                )
                if cursor.fetchone()[0]:
                    problems.append(f"#{job}: claimed again after its cancel at {at}")
    assert problems == [], f"seed {seed}: {problems[:20]}"
