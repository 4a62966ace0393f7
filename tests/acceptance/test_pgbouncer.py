"""A worker behind PgBouncer in transaction mode, as production runs it
(docs/scaling.md): nothing it does outlives its transaction on a pooled
server connection, and its wake-ups come through a direct LISTEN connection.

PgBouncer hands each transaction to whichever server connection is free and
never resets one between clients: a session ``SET``, a session advisory
lock, a prepared statement, a temporary table or a ``LISTEN`` left there is
what the next client (the application's own transactions) gets.
"""

from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import transaction
from jobtests.durable_jobs import nap, staged
from jobtests.jobs import async_echo, checks_for_cancel, doomed, gated, record
from jobtests.models import RunRecord

from django_workhorse import Admin
from django_workhorse.models import AttemptHistory, JobOutcome, JobRuntime
from tests.acceptance.conftest import database_name
from tests.helpers import EVERY_FEATURE, PGBOUNCER_POOL_SIZE

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

CARRIED_BY_PGBOUNCER = {
    "application_name",
    "client_encoding",
    "DateStyle",
    "TimeZone",
    "standard_conforming_strings",
}
"""Parameters PgBouncer itself sets on a server connection for each client
(it tracks them per client); any other session-level setting is a leak."""

QUEUES = ",".join(
    [
        "jobtests.record",
        "jobtests.staged",
        "jobtests.nap",
        "jobtests.cancel",
        "jobtests.doomed",
        "jobtests.async",
    ]
)


def session_state(conn: psycopg.Connection) -> dict[str, Any]:
    """What the server connection behind ``conn`` (in a transaction) carries
    beyond the server's defaults: empty when it is clean."""
    found: dict[str, Any] = {}
    settings = conn.execute(
        "SELECT name, setting FROM pg_settings WHERE source = 'session' ORDER BY name"
    ).fetchall()
    found.update(
        {f"SET {name}": value for name, value in settings if name not in CARRIED_BY_PGBOUNCER}
    )
    checks = {
        "prepared statements": "SELECT array_agg(name) FROM pg_prepared_statements",
        "LISTEN channels": "SELECT array_agg(c) FROM pg_listening_channels() AS c",
        "advisory locks": (
            "SELECT array_agg(objid) FROM pg_locks"
            " WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
        ),
        "temporary tables": (
            "SELECT array_agg(relname) FROM pg_class WHERE relnamespace = pg_my_temp_schema()"
        ),
    }
    for what, query in checks.items():
        row = conn.execute(query).fetchone()
        if row and row[0]:
            found[what] = row[0]
    return found


def every_server_connection(bouncer: Any) -> list[dict[str, Any]]:
    """``session_state`` of each server connection of the pool: as many
    clients as the pool has connections, each holding a transaction open, so
    that each gets a server connection of its own."""
    url = bouncer.url_for(database_name())
    states = []
    with contextlib.ExitStack() as stack:
        for _ in range(PGBOUNCER_POOL_SIZE):
            conn = stack.enter_context(psycopg.connect(url, prepare_threshold=None))
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]  # opens the transaction
            states.append({"server pid": pid, **session_state(conn)})
    assert len({state["server pid"] for state in states}) == PGBOUNCER_POOL_SIZE
    return states


def test_a_worker_leaves_no_session_state_on_pgbouncers_server_connections(
    pgbouncer, start_worker, wait_until
):
    with transaction.atomic():
        checkpointed = [staged.enqueue() for _ in range(3)]
        slept = [nap.enqueue(seconds=0.3) for _ in range(3)]
        plain = record.enqueue_many([{"label": f"r{i}"} for i in range(20)])
        failing = doomed.enqueue()
        echoed = async_echo.enqueue(value="x")
        canceled = checks_for_cancel.enqueue()
    # The record queue limited too: its claims lock the queue's row and keep
    # its rate record.
    limited = {"jobtests.record": {"global_concurrency": 2, "rate": 100, "period": 1}}
    worker = start_worker(
        "--queues",
        QUEUES,
        "--concurrency",
        "4",
        settings={**EVERY_FEATURE, "QUEUES": limited},
        through=pgbouncer,
    )
    wait_until(
        lambda: RunRecord.objects.filter(job_id=canceled.id).exists(),
        timeout=30,
        what="the job to cancel started",
    )
    Admin().cancel(canceled.id, "the leak test")
    finished = [*checkpointed, *slept, *plain, failing, echoed, canceled]
    wait_until(
        lambda: not JobRuntime.objects.filter(job_id__in=[h.id for h in finished]).exists(),
        timeout=60,
        what="every job ended",
    )
    # Jobs of the schedule ran and finished jobs were retired meanwhile.
    wait_until(
        lambda: RunRecord.objects.exclude(job_id__in=[h.id for h in finished]).count() >= 3,
        timeout=30,
        what="three jobs of the schedule ran",
    )
    wait_until(
        lambda: not JobOutcome.objects.filter(job_id__in=[h.id for h in plain]).exists(),
        timeout=30,
        what="retention retired the finished jobs",
    )
    assert worker.stop() == 0

    states = every_server_connection(pgbouncer)

    assert [{k: v for k, v in s.items() if k != "server pid"} for s in states] == [
        {}
    ] * PGBOUNCER_POOL_SIZE, states


def test_a_worker_behind_pgbouncer_is_woken_through_its_direct_listen_connection(
    pgbouncer, start_worker, wait_until
):
    worker = start_worker(
        "--queues",
        "jobtests.record",
        settings={"POLL_INTERVAL": 3600, "LISTEN_DATABASE": "direct"},
        through=pgbouncer,
    )
    assert "polling" not in worker.stderr

    job = record.enqueue(label="woken")

    # With an hour between polls, only the NOTIFY can have started it.
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=job.id).exists(),
        timeout=30,
        what="the job picked up at once",
    )
    assert worker.stop() == 0


POLLING = {"POLL_INTERVAL": 0.5}


def polling_warning(worker, wait_until) -> str:
    """Run one job on ``worker`` (which polls: its wake-ups cannot reach it),
    stop it, and return its one line saying that it polls."""
    job = record.enqueue(label="polled")
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=job.id).exists(),
        timeout=30,
        what="the job picked up by a poll",
    )
    assert worker.stop() == 0
    [line] = [line for line in worker.stderr.splitlines() if "polling every" in line]
    return line


def test_a_worker_behind_pgbouncer_without_a_direct_connection_says_once_that_it_polls(
    pgbouncer, start_worker, wait_until
):
    line = polling_warning(
        start_worker("--queues", "jobtests.record", settings=POLLING, through=pgbouncer),
        wait_until,
    )
    assert "reached through a connection pooler" in line
    assert "WORKHORSE['LISTEN_DATABASE']" in line
    assert logging.getLevelName(logging.WARNING) in line


def claims_waiting_on_a_lock(conn: psycopg.Connection) -> int:
    """Server connections whose claim waits on a lock (PgBouncer names a
    server connection after the client it serves)."""
    return conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name LIKE 'workhorse-worker %%' AND wait_event_type = 'Lock'"
    ).fetchone()[0]


def lease_expiry(conn: psycopg.Connection, job_id: int) -> Any:
    row = conn.execute(
        "SELECT lease_expires_at, lease_expires_at < now() FROM workhorse_job_runtime"
        " WHERE job_id = %s AND state = 'active'",
        [job_id],
    ).fetchone()
    return row


def start_sleepers(start_worker: Any, pgbouncer: Any, workers: int) -> list[Any]:
    """``workers`` workers of jobtests.sleep behind ``pgbouncer``, started together."""
    started = [
        start_worker(
            "--queues",
            "jobtests.sleep",
            "--concurrency",
            "2",
            settings={
                "LOCK_DURATION": 2,
                "STALLED_INTERVAL": 0.5,
                "POLL_INTERVAL": 0.2,
                "LISTEN_DATABASE": "direct",
            },
            through=pgbouncer,
            name=f"sleeper-{i}",
            ready=False,
        )
        for i in range(workers)
    ]
    for worker in started:
        worker.wait_ready()
    return started


def long_job(tmp_path: Path) -> Any:
    """A job of jobtests.sleep that runs until ``end_long_job(tmp_path)``,
    however long what the test does to its worker takes."""
    return gated.options(queue="jobtests.sleep").enqueue(path=str(tmp_path / "end"), label="long")


def end_long_job(tmp_path: Path) -> None:
    (tmp_path / "end").touch()


def test_with_fewer_workers_than_the_pool_claims_stuck_on_a_lock_leave_renewals_a_connection(
    pgbouncer, start_worker, wait_until, pg_connect, tmp_path
):
    """Each worker process has one claim in flight at most: with fewer
    worker processes than the pool has server connections, claims waiting
    on a lock (an operator's, on the queue table) leave one to the lease
    renewals, and the running job's lease is renewed as usual."""
    workers = start_sleepers(start_worker, pgbouncer, PGBOUNCER_POOL_SIZE - 1)
    running = long_job(tmp_path)
    watch = pg_connect()
    wait_until(lambda: lease_expiry(watch, running.id), what="the long job running")
    blocker = pg_connect()
    with blocker.transaction():
        blocker.execute("LOCK TABLE workhorse_queue IN ACCESS EXCLUSIVE MODE")
        wait_until(
            lambda: claims_waiting_on_a_lock(watch) == len(workers),
            what="every worker's claim stuck on the lock",
        )
        renewals = [lease_expiry(watch, running.id)[0]]
        for _ in range(3):  # three renewals (one every LOCK_RENEW_INTERVAL) while the claims wait
            wait_until(
                lambda: lease_expiry(watch, running.id)[0] not in renewals,
                timeout=10,
                what="a renewal while the claims wait",
            )
            renewals.append(lease_expiry(watch, running.id)[0])
        assert claims_waiting_on_a_lock(watch) == len(workers)
    end_long_job(tmp_path)
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=running.id).exists(),
        timeout=30,
        what="the long job finished",
    )
    assert [w.stop() for w in workers] == [0] * len(workers)
    outcome = JobOutcome.objects.get(job_id=running.id)
    assert (outcome.state, outcome.attempts, outcome.stall_count) == ("succeeded", 1, 0)


def test_with_more_workers_than_the_pool_stuck_claims_cost_a_live_worker_no_job(
    pgbouncer, start_worker, wait_until, pg_connect, tmp_path
):
    """When claims waiting on a lock hold every server connection of the
    pool, the renewals wait in PgBouncer behind them and the running job's
    lease runs out; yet its worker proves itself alive on its direct
    connection (docs/worker.md#liveness), so no stall sweep takes the job,
    and it runs once and succeeds."""
    workers = start_sleepers(start_worker, pgbouncer, PGBOUNCER_POOL_SIZE + 1)
    running = long_job(tmp_path)
    watch = pg_connect()
    wait_until(lambda: lease_expiry(watch, running.id), what="the long job running")
    blocker = pg_connect()
    with blocker.transaction():
        blocker.execute("LOCK TABLE workhorse_queue IN ACCESS EXCLUSIVE MODE")
        wait_until(
            lambda: claims_waiting_on_a_lock(watch) == PGBOUNCER_POOL_SIZE,
            what="a stuck claim on every server connection",
        )
        wait_until(
            lambda: lease_expiry(watch, running.id)[1],
            timeout=10,
            what="the lease run out behind the full pool",
        )
        # Past the lease and then some: sweeps on the direct LISTEN
        # connections would see it, as would any worker's (none may take it).
        time.sleep(3)
        assert all(w.proc.poll() is None for w in workers)
    end_long_job(tmp_path)
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=running.id).exists(),
        timeout=30,
        what="the long job finished",
    )
    assert [w.stop() for w in workers] == [0] * len(workers)
    outcome = JobOutcome.objects.get(job_id=running.id)
    assert (outcome.state, outcome.attempts, outcome.stall_count) == ("succeeded", 1, 0)
    assert list(
        AttemptHistory.objects.filter(job_id=running.id).values_list("outcome", flat=True)
    ) == ["succeeded"]


def test_a_listen_database_that_goes_through_the_pooler_too_is_named_in_the_polling_warning(
    pgbouncer, start_worker, wait_until
):
    worker = start_worker(
        "--queues",
        "jobtests.record",
        settings={**POLLING, "LISTEN_DATABASE": "direct"},
        env={"DIRECT_DATABASE_URL": pgbouncer.url_for(database_name())},
        through=pgbouncer,
    )
    line = polling_warning(worker, wait_until)
    assert "WORKHORSE['LISTEN_DATABASE'] names 'direct'" in line
    assert "reached through a connection pooler too" in line
    assert "Point that alias at PostgreSQL itself" in line
