"""A live worker never loses a job to waiting (DESIGN.md principle 10).

Each test runs a long job L on a real worker A with a second worker B
beside it, both on short leases, and holds one blocker from a connection of
its own for two lease durations: an application transaction that enqueues
a dependent of a job finishing on A, an operator's ``FOR UPDATE`` on a
limited queue's row, a migration's ``LOCK TABLE`` on each table the lease
renewal or the stall sweep touches, and a PgBouncer pool that claims waiting
on a lock fill. Whatever waits (A's finishes, its claims, B's claims), L
keeps its one owner: it runs once, its only attempt succeeds, nothing
records it stalled, and both workers stay up throughout.

Leases are granted when they commit: a claim or a renewal that waited on a
lock gets a full lease from its commit, not from the start of its
transaction (the last two tests).

A worker that is really gone still loses its jobs when its lease ends:
``test_crashes.py`` (SIGKILL, SIGSTOP) and ``test_durable_checkpoints.py``
keep that side; nothing here contradicts them.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection, transaction
from jobtests.jobs import gated, record
from jobtests.models import RunRecord

from django_workhorse.db import store
from django_workhorse.models import AttemptHistory, JobOutcome, JobRuntime
from tests.acceptance.conftest import WorkerProcess
from tests.helpers import PGBOUNCER_POOL_SIZE

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

LEASE = 2.0
"""LOCK_DURATION of every worker here: the floor (conf.CADENCE_FLOORS) is far
lower, but a lease shorter than this would expire on a busy test machine
with nothing blocked at all."""

SHORT_LEASES = {
    "LOCK_DURATION": LEASE,
    "LOCK_RENEW_INTERVAL": 0.5,
    "STALLED_INTERVAL": 0.5,
    "POLL_INTERVAL": 0.5,
}

BLOCK = 2 * LEASE
"""How long each blocker is held: long enough that a lease the blocker kept
from being renewed (the last renewal at most LOCK_RENEW_INTERVAL before it
took hold) has run out for two seconds or more when it lets go, while the
other worker's sweeps, every STALLED_INTERVAL, look for such leases."""

AFTER = LEASE + 2 * SHORT_LEASES["STALLED_INTERVAL"]
"""How long L keeps running once the blocker is gone: a lease and two stall
sweeps, so that a lease the blocker left stale is taken by some sweep
before L may end."""

QUEUE = "jobtests.gated"
LIMITED = "jobtests.contention-limited"
LIMITS = {"QUEUES": {LIMITED: {"global_concurrency": 2}}}


class Gates:
    """Files the ``gated`` jobs wait for: ``open(name)`` lets them end."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, name: str) -> str:
        return str(self.directory / f"{name}.open")

    def open(self, name: str) -> None:
        Path(self.path(name)).touch()


@pytest.fixture
def gates(tmp_path: Path) -> Gates:
    return Gates(tmp_path)


def hold(seconds: float, workers: list[WorkerProcess]) -> None:
    """Let ``seconds`` pass with whatever the test holds still held, checking
    all along that every worker is running. The length is the scenario (a
    lock held for so long), not a guess at how long something takes."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        gone = [f"{w.name} (exit {w.returncode})" for w in workers if not w.alive()]
        assert not gone, f"workers exited while the block was held: {gone}"
        time.sleep(0.1)


def runs_on(job_id: int, worker: WorkerProcess) -> bool:
    return RunRecord.objects.filter(job_id=job_id, pid=worker.pid).exists()


def start_pair(
    start_worker: Callable[..., WorkerProcess],
    wait_until: Callable[..., Any],
    enqueue: Callable[[], list[Any]],
    *,
    queue: str = QUEUE,
    concurrency: int = 1,
    settings: dict[str, Any] | None = None,
) -> tuple[WorkerProcess, WorkerProcess, list[Any]]:
    """Worker A running the jobs ``enqueue`` makes, and worker B beside it
    serving the same queue (started once the jobs were enqueued, so that A
    takes them); returns (A, B, handles)."""
    settings = {**SHORT_LEASES, **(settings or {})}
    a = start_worker(
        "--queues", queue, "--concurrency", str(concurrency), settings=settings, name="A"
    )
    handles = enqueue()
    b = start_worker("--queues", queue, settings=settings, name="B", ready=False)
    wait_until(
        lambda: all(runs_on(h.id, a) for h in handles),
        timeout=30,
        what="the jobs running on worker A",
    )
    b.wait_ready()
    return a, b, handles


@dataclass(frozen=True)
class GatedJob:
    id: int
    gate: str
    """The name of the gate that lets it end (``Gates.open``)."""


def gated_job(gates: Gates, name: str, queue: str = QUEUE) -> GatedJob:
    """A ``gated`` job of ``queue`` labelled ``name``, whose gate is ``name``."""
    handle = gated.options(queue=queue).enqueue(path=gates.path(name), label=name)
    return GatedJob(handle.id, name)


def long_job(gates: Gates, queue: str = QUEUE) -> GatedJob:
    """L: the long job each test keeps running through its blocker."""
    return gated_job(gates, "L", queue)


def finish(
    jobs: list[GatedJob], gates: Gates, workers: list[WorkerProcess], wait_until: Any
) -> None:
    """Keep the gated ``jobs`` running for ``AFTER`` more seconds, let them
    end, wait until every run of them returned, and stop the workers (each
    must still be running)."""
    hold(AFTER, workers)
    for job in jobs:
        gates.open(job.gate)
    ids = [job.id for job in jobs]
    wait_until(
        lambda: (
            JobOutcome.objects.filter(job_id__in=ids).count() == len(ids)
            and not RunRecord.objects.filter(job_id__in=ids, finished_at=None).exists()
        ),
        timeout=60,
        what="the gated jobs ended and every run of them returned",
    )
    assert [w.name for w in workers if not w.alive()] == []
    for worker in workers:  # all at once: each takes its time to stop
        worker.send(signal.SIGTERM)
    assert [w.wait_exit(20) for w in workers] == [0] * len(workers)


def assert_ran_once(job: GatedJob, workers: list[WorkerProcess]) -> None:
    """``job`` ran once, on one of ``workers``: one attempt, closed
    succeeded, no stall, one run of its handler."""
    runs = list(
        RunRecord.objects.filter(job_id=job.id).order_by("started_at").values_list("pid", flat=True)
    )
    [first] = [w for w in workers if w.pid == runs[0]]
    outcome = JobOutcome.objects.get(job_id=job.id)
    assert {
        "state": outcome.state,
        "stalls": outcome.stall_count,
        "attempts": list(
            AttemptHistory.objects.filter(job_id=job.id)
            .order_by("finished_at", "id")
            .values_list("attempt", "outcome", "worker_id")
        ),
        "runs": [next(w.name for w in workers if w.pid == pid) for pid in runs],
    } == {
        "state": "succeeded",
        "stalls": 0,
        "attempts": [(1, "succeeded", first.worker_id)],
        "runs": [first.name],
    }


def test_an_open_transaction_enqueueing_a_dependent_of_a_finishing_job_costs_no_lease(
    start_worker, wait_until, gates
):
    """The application's transaction holds S's row (FOR KEY SHARE) until it
    commits; A's write of S's success waits for it: that may delay S's
    result, not cost L its owner."""

    def enqueue() -> list[Any]:
        with transaction.atomic():
            return [long_job(gates), gated_job(gates, "S")]

    a, b, (job, short) = start_pair(start_worker, wait_until, enqueue, concurrency=2)
    entered, release = threading.Event(), threading.Event()

    def application() -> None:
        try:
            with transaction.atomic():
                record.options(depends_on=[short.id]).enqueue(label="after S")
                entered.set()
                release.wait(60)
        finally:
            connection.close()

    app = threading.Thread(target=application, name="application-transaction")
    app.start()
    try:
        assert entered.wait(30), "the application's enqueue did not finish"
        gates.open(short.gate)
        wait_until(
            lambda: RunRecord.objects.filter(job_id=short.id, finished_at__isnull=False).exists(),
            what="S's handler returned (its success waits on the application's transaction)",
        )
        hold(BLOCK, [a, b])
    finally:
        release.set()
        app.join(30)
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=short.id).exists(), what="S's success written"
    )
    finish([job], gates, [a, b], wait_until)

    assert JobOutcome.objects.get(job_id=short.id).state == "succeeded"
    assert_ran_once(job, [a, b])


def test_an_operators_lock_on_a_limited_queues_row_costs_no_lease(
    start_worker, wait_until, gates, pg_connect
):
    """L and S run on A in a queue limited to two at once, and a third job
    waits for a place: S's finish frees one, and with the queue's row locked
    by an operator that write waits, as every claim of the queue does."""

    def enqueue() -> list[Any]:
        with transaction.atomic():
            return [
                long_job(gates, LIMITED),
                gated_job(gates, "S", LIMITED),
            ]

    a, b, (job, short) = start_pair(
        start_worker, wait_until, enqueue, queue=LIMITED, concurrency=3, settings=LIMITS
    )
    waiting = record.options(queue=LIMITED).enqueue(label="waits for a place")
    watch = pg_connect()
    # The claims that found no place marked the queue, so that the finish
    # that frees one wakes its workers: that finish writes the queue's row.
    wait_until(
        lambda: watch.execute(
            "SELECT held_back FROM workhorse_queue WHERE name = %s", [LIMITED]
        ).fetchone()[0],
        what="a claim found the limited queue full",
    )
    operator = pg_connect()
    with operator.transaction():
        operator.execute("SELECT * FROM workhorse_queue WHERE name = %s FOR UPDATE", [LIMITED])
        gates.open(short.gate)
        wait_until(
            lambda: RunRecord.objects.filter(job_id=short.id, finished_at__isnull=False).exists(),
            what="S's handler returned",
        )
        hold(BLOCK, [a, b])
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=waiting.id).exists(),
        timeout=30,
        what="the job that waited for a place ran",
    )
    finish([job], gates, [a, b], wait_until)

    assert JobOutcome.objects.get(job_id=short.id).state == "succeeded"
    assert_ran_once(job, [a, b])


RENEWAL_AND_SWEEP_TABLES = [
    "workhorse_job_runtime",
    "workhorse_worker",
    "workhorse_job",
    "workhorse_job_event",
    "workhorse_attempt_history",
    "workhorse_queue",
]
"""What ``workhorse_heartbeat_many_v1`` writes (the runtime rows, the
worker's own row) and what ``workhorse_recover_stalled_v1`` reads and, through
``workhorse_requeue_runs_v1`` and ``workhorse_end_runs_v1``, writes."""


@pytest.mark.parametrize("table", RENEWAL_AND_SWEEP_TABLES)
def test_a_migrations_lock_on_a_table_of_renewals_or_sweeps_costs_no_lease(
    start_worker, wait_until, gates, pg_connect, table
):
    """What a migration takes (``ALTER TABLE``, ``LOCK TABLE``) on any table
    the renewal or the stall sweep reads or writes holds up every statement
    on that table, A's renewals or the sweeps of both workers among them."""
    a, b, (job,) = start_pair(start_worker, wait_until, lambda: [long_job(gates)])
    migration = pg_connect()
    with migration.transaction():
        migration.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        hold(BLOCK, [a, b])
    finish([job], gates, [a, b], wait_until)

    assert_ran_once(job, [a, b])


POOLED_WORKERS = 5


def test_claims_filling_a_pgbouncer_pool_cost_no_lease(
    start_worker, wait_until, gates, pg_connect, pgbouncer
):
    """Five workers behind a pool of three server connections claim from a
    limited queue whose row an operator holds: their claims wait, holding
    the pool's server connections, and the renewals queue in PgBouncer
    behind them. A job enqueued meanwhile (X) is claimed by one of the
    claims that waited, once the row is let go: it runs once too."""
    assert PGBOUNCER_POOL_SIZE < POOLED_WORKERS
    settings = {**SHORT_LEASES, **LIMITS, "POLL_INTERVAL": 0.2, "LISTEN_DATABASE": "direct"}
    job = long_job(gates, LIMITED)
    workers = [
        start_worker(
            "--queues",
            LIMITED,
            "--concurrency",
            "2",
            settings=settings,
            through=pgbouncer,
            name=f"pooled-{i}",
            ready=False,
        )
        for i in range(POOLED_WORKERS)
    ]
    for worker in workers:
        worker.wait_ready()
    wait_until(
        lambda: any(runs_on(job.id, w) for w in workers), timeout=30, what="the long job running"
    )
    operator = pg_connect()
    with operator.transaction():
        operator.execute("SELECT * FROM workhorse_queue WHERE name = %s FOR UPDATE", [LIMITED])
        hold(LEASE, workers)  # the idle workers' claims wait from the start
        claimed_late = gated_job(gates, "X", LIMITED)
        hold(BLOCK - LEASE, workers)
    finish([job, claimed_late], gates, workers, wait_until)

    assert_ran_once(job, workers)
    assert_ran_once(claimed_late, workers)


# -- leases count from their commit --------------------------------------

TOLERANCE = 0.5
"""Seconds a committed lease may fall short of its commit plus the lease:
the time between the blocker's last clock reading and its commit."""


def waits_on_a_lock(watch: psycopg.Connection, pid: int, seconds: float) -> bool:
    """The session ``pid`` has waited on a lock for ``seconds`` or more."""
    return watch.execute(
        "SELECT wait_event_type = 'Lock' AND clock_timestamp() - query_start"
        " >= make_interval(secs => %s) FROM pg_stat_activity WHERE pid = %s",
        [seconds, pid],
    ).fetchone()[0]


def after_a_wait(pg_connect, call: Callable[[Any], Any]) -> tuple[Any, Any, Any]:
    """Run ``call(cursor)`` on a connection of its own while a migration's
    lock on the runtime table makes it wait longer than a lease; returns
    (what it returned, the database clock just before the lock went, the
    database clock just after the call returned)."""
    caller, migration, watch = pg_connect(), pg_connect(), pg_connect()
    answer: list[Any] = []
    with migration.transaction():
        migration.execute("LOCK TABLE workhorse_job_runtime IN EXCLUSIVE MODE")
        thread = threading.Thread(target=lambda: answer.append(call(caller.cursor())))
        thread.start()
        pid = caller.info.backend_pid
        deadline = time.monotonic() + 30
        while not waits_on_a_lock(watch, pid, LEASE + 1):
            assert time.monotonic() < deadline, "the call never waited on the lock"
            time.sleep(0.05)
        released_at = migration.execute("SELECT clock_timestamp()").fetchone()[0]
    thread.join(30)
    assert answer, "the call did not return once the lock went"
    after = watch.execute("SELECT clock_timestamp()").fetchone()[0]
    return answer[0], released_at, after


def lease_left_at(moment: datetime, lease: datetime) -> float:
    """Seconds of ``lease`` left at ``moment`` (both on the database clock)."""
    return (lease - moment).total_seconds()


def test_a_claim_that_waited_on_a_lock_gets_a_full_lease_from_its_commit(pg_connect):
    job = record.enqueue(label="claimed late")

    claimed, released_at, after = after_a_wait(
        pg_connect,
        lambda cursor: store.claim_many(cursor, "late-claimer", [job.queue], [1], LEASE),
    )

    assert [c.job_id for c in claimed] == [job.id]
    lease = JobRuntime.objects.get(job_id=job.id).lease_expires_at
    assert claimed[0].lease_expires_at == lease
    assert lease_left_at(released_at, lease) >= LEASE - TOLERANCE
    assert lease_left_at(after, lease) <= LEASE


def test_a_renewal_that_waited_on_a_lock_gets_a_full_lease_from_its_commit(pg_connect):
    job = record.enqueue(label="renewed late")
    (claimed,) = store.claim_many(pg_connect().cursor(), "renewer", [job.queue], [1], LEASE)

    renewed, released_at, after = after_a_wait(
        pg_connect,
        lambda cursor: store.heartbeat_many(cursor, "renewer", [job.id], [claimed.fence], LEASE),
    )

    assert renewed == [(job.id, True, False)]
    lease = JobRuntime.objects.get(job_id=job.id).lease_expires_at
    assert lease_left_at(released_at, lease) >= LEASE - TOLERANCE
    assert lease_left_at(after, lease) <= LEASE
