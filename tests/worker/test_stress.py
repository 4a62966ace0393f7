"""Thousands of short jobs under chaos, in one process with real threads.

Random timeouts (sync runs abandoned while their slot stays taken), leases
stolen by a recovery while runs go on or wait for the writer, and cancels
delivered as the heartbeat delivers them, all with the interpreter switching
threads every microsecond. At the end every job has exactly one outcome,
none succeeded twice, and the ledger's counts are back to zero.

``WORKHORSE_SOAK_ROUNDS`` scales it up under ``make soak``;
``WORKHORSE_SOAK_SEED`` replays a run (the seed is printed).
"""

from __future__ import annotations

import collections
import logging
import os
import random
import sys
import time

import pytest

from tests.helpers import poll_until
from tests.worker import jobs
from tests.worker.conftest import IN_PROCESS

pytestmark = [pytest.mark.soak, IN_PROCESS]

ROUNDS = int(os.environ.get("WORKHORSE_SOAK_ROUNDS", "6"))
JOBS = max(1000, 200 * ROUNDS)
ZERO = {"running": 0, "writing": 0, "holding": 0, "busy": 0}


def enqueue_all(rng: random.Random) -> list[int]:
    by_options: dict[tuple[str, float | None], list[dict]] = collections.defaultdict(list)
    for _ in range(JOBS):
        handler = "achaos" if rng.random() < 0.15 else "chaos"
        timeout = rng.choice([0.001, 0.005, 0.01]) if rng.random() < 0.2 else None
        seconds = rng.choice([0, 0, 0, 0.0005, 0.002, 0.02])
        by_options[(handler, timeout)].append({"seconds": seconds})
    ids = []
    for (handler, timeout), payloads in by_options.items():
        definition = getattr(jobs, handler)
        bound = definition.options(timeout=timeout) if timeout else definition.options()
        ids.extend(h.id for h in bound.enqueue_many(payloads))
    return ids


def count(cursor, sql: str, ids: list[int]) -> int:
    cursor.execute(sql, [ids])
    return cursor.fetchone()[0]


def steal_a_lease(thief) -> bool:
    """Expire one active job's lease and recover it, as another worker would."""
    with thief.transaction():
        row = thief.execute(
            "SELECT job_id FROM workhorse_job_runtime WHERE state = 'active'"
            " ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED"
        ).fetchone()
        if row is None:
            return False
        thief.execute(
            "UPDATE workhorse_job_runtime SET lease_expires_at = now() - interval '1 second'"
            " WHERE job_id = %s",
            [row[0]],
        )
        thief.execute("SELECT count(*) FROM workhorse_recover_stalled_v1()")
    return True


def test_short_jobs_under_chaos_each_end_once_and_the_ledger_returns_to_zero(
    start_worker, cursor, pg_connect, caplog
):
    caplog.set_level(logging.ERROR, logger="django_workhorse.worker")
    seed = int(os.environ.get("WORKHORSE_SOAK_SEED", time.time_ns() % 1_000_000))
    rng = random.Random(seed)
    print(f"stress seed {seed} (WORKHORSE_SOAK_SEED={seed} replays it), {JOBS} jobs")
    ids = enqueue_all(rng)
    thief = pg_connect()
    actions: collections.Counter[str] = collections.Counter()
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        running = start_worker(
            {"inproc.chaos": 8}, LOCK_DURATION=10, LOCK_RENEW_INTERVAL=0.05, STALLED_INTERVAL=0.5
        )
        deadline = time.monotonic() + 600
        outcomes_sql = "SELECT count(*) FROM workhorse_job_outcome WHERE job_id = ANY(%s)"
        while count(cursor, outcomes_sql, ids) < JOBS:
            assert time.monotonic() < deadline, f"seed {seed}: not done; {dict(actions)}"
            assert running.thread.is_alive(), f"seed {seed}: the worker stopped"
            roll = rng.random()
            if roll < 0.3 and steal_a_lease(thief):
                actions["stolen leases"] += 1
            elif roll < 0.6:
                runs = running.ledger.running_runs()
                if runs:
                    # What the heartbeat does when a cancel request comes back.
                    running.worker._on_cancel(rng.choice(runs).job.job_id)
                    actions["cancels"] += 1
            time.sleep(0.002)
    finally:
        sys.setswitchinterval(switch_interval)
    assert running.stop() == 0
    print(f"stress actions: {dict(actions)}")
    # Threads of timed-out runs may still be finishing their handler: their
    # slots are counted until they return.
    poll_until(
        lambda: running.ledger.counts() == ZERO,
        timeout=30,
        interval=0.01,
        what=f"the ledger to return to zero (seed {seed})",
        context=lambda: str(running.ledger.counts()),
    )
    assert count(cursor, outcomes_sql, ids) == JOBS
    assert (
        count(cursor, "SELECT count(*) FROM workhorse_job_runtime WHERE job_id = ANY(%s)", ids) == 0
    )
    twice = count(
        cursor,
        "SELECT count(*) FROM (SELECT job_id FROM workhorse_attempt_history"
        " WHERE job_id = ANY(%s) AND outcome = 'succeeded' GROUP BY job_id HAVING count(*) > 1) t",
        ids,
    )
    assert twice == 0, f"seed {seed}: {twice} job(s) recorded two successes"
    assert not [r for r in caplog.records if "unexpected error" in r.getMessage()]
