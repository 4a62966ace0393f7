"""How many connections a worker holds (docs/worker.md#connections): two to its
database (claims, leases) plus its LISTEN connection, whatever its slots and
features; under ``--processes`` each child as many, the supervisor none.

Counted in ``pg_stat_activity`` on direct connections, by the application_name
each connection carries in its connection string (``<role> <worker id>``).
The handlers' own ORM connections are the application's, not counted here.
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from jobtests.durable_jobs import nap, staged
from jobtests.jobs import async_echo, checks_for_cancel, doomed, gated, record, sleep
from jobtests.models import RunRecord

from django_workhorse import Admin
from django_workhorse.models import JobOutcome, JobRuntime
from tests.helpers import EVERY_FEATURE

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

QUEUES = (
    "jobtests.record,jobtests.staged,jobtests.nap,jobtests.cancel,jobtests.doomed,jobtests.async"
)


def connections_by_worker() -> dict[str, dict[str, int]]:
    """``{worker id: {role: sessions}}`` of every worker connected now."""
    with connection.cursor() as cursor:
        # A live listener is named for its worker's liveness key
        # (workhorse_pulse_v1): the registry's ids lead back to the worker.
        cursor.execute(
            "SELECT coalesce(w.worker_id, substr(a.application_name,"
            " strpos(a.application_name, ' ') + 1)),"
            " split_part(a.application_name, ' ', 1), count(*)"
            " FROM pg_stat_activity a LEFT JOIN workhorse_worker w"
            " ON a.application_name ~ '^workhorse-listener [0-9]+ '"
            " AND workhorse_worker_key_v1(w.worker_id) = split_part(a.application_name, ' ', 3)"
            " WHERE a.datname = current_database()"
            " AND a.application_name LIKE 'workhorse-%%' GROUP BY 1, 2"
        )
        found: dict[str, dict[str, int]] = {}
        for worker, role, count in cursor.fetchall():
            found.setdefault(worker, {})[role] = count
        return found


def enqueue_every_kind() -> tuple[list[int], int]:
    with transaction.atomic():
        handles = [
            *[staged.enqueue(hold=0.2) for _ in range(6)],
            *[nap.enqueue(seconds=0.3) for _ in range(6)],
            *record.enqueue_many([{"label": f"r{i}"} for i in range(40)]),
            doomed.enqueue(),
            async_echo.enqueue(value="x"),
        ]
        canceled = checks_for_cancel.enqueue()
    return [h.id for h in handles], canceled.id


@pytest.mark.parametrize("processes", [1, 2], ids=["one process", "two processes"])
def test_a_worker_holds_two_connections_and_its_listen_connection_with_every_feature_on(
    processes, start_worker, wait_until
):
    ids, canceled = enqueue_every_kind()
    flags = ["--queues", QUEUES, "--concurrency", "8"]
    if processes > 1:
        flags += ["--processes", str(processes)]
    worker = start_worker(*flags, settings=EVERY_FEATURE, processes=processes)
    worker_ids = worker.worker_ids()
    assert len(worker_ids) == processes

    most: dict[str, dict[str, int]] = {}

    def sample() -> None:
        for worker_id, held in connections_by_worker().items():
            seen = most.setdefault(worker_id, {})
            for role, count in held.items():
                seen[role] = max(seen.get(role, 0), count)

    def ended() -> bool:
        sample()
        return not JobRuntime.objects.filter(job_id__in=ids).exists()

    wait_until(
        lambda: sample() or RunRecord.objects.filter(job_id=canceled).exists(),
        timeout=30,
        what="the job to cancel started",
    )
    Admin().cancel(canceled, "counting connections")
    wait_until(ended, timeout=60, what="every job ended", interval=0.01)
    status = StringIO()
    call_command("workhorse_status", "--json", stdout=status)
    assert worker.stop() == 0

    assert sorted(most) == sorted(worker_ids)  # the supervisor holds none
    for worker_id in worker_ids:
        assert most[worker_id] == {
            "workhorse-worker": 1,
            "workhorse-heartbeat": 1,
            "workhorse-listener": 1,
        }, worker_id
    shown = json.loads(status.getvalue())["workers"]["connections"]
    assert {w: shown[w] for w in worker_ids} == {
        w: {"claims": 1, "leases": 1, "listen": 1} for w in worker_ids
    }


def claim_connection_waits_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND application_name LIKE 'workhorse-worker %%' AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0] == 1


def lease_expiry(job_id: int):
    return (
        JobRuntime.objects.filter(job_id=job_id, state="active")
        .values_list("lease_expires_at", flat=True)
        .first()
    )


def test_a_claim_stuck_on_a_lock_does_not_hold_up_the_lease_renewals(
    start_worker, wait_until, pg_connect, tmp_path
):
    """The heartbeat renews on the lease connection: while the claim
    connection waits (here on a lock an operator holds on the queue table),
    the running job's lease is renewed as usual and nobody takes it."""
    # Runs until the test lets it end, once the lock is gone.
    running = gated.options(queue="jobtests.sleep").enqueue(path=str(tmp_path / "end"))
    worker = start_worker(
        "--queues",
        "jobtests.sleep",
        "--concurrency",
        "2",
        settings={"LOCK_DURATION": 2, "STALLED_INTERVAL": 0.5, "POLL_INTERVAL": 0.2},
    )
    wait_until(lambda: lease_expiry(running.id), what="the long job running")
    blocker = pg_connect()
    with blocker.transaction():
        blocker.execute("LOCK TABLE workhorse_queue IN ACCESS EXCLUSIVE MODE")
        sleep.enqueue(seconds=0)
        wait_until(claim_connection_waits_on_a_lock, what="the claim connection stuck")
        renewals = [lease_expiry(running.id)]
        for _ in range(3):  # three renewals (one a second) while the claim waits
            wait_until(
                lambda: lease_expiry(running.id) not in renewals,
                timeout=10,
                what="a renewal while the claim waits",
            )
            renewals.append(lease_expiry(running.id))
        assert claim_connection_waits_on_a_lock()
    (tmp_path / "end").touch()
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=running.id).exists(),
        timeout=30,
        what="the long job finished",
    )
    assert worker.stop() == 0
    outcome = JobOutcome.objects.get(job_id=running.id)
    assert (outcome.state, outcome.attempts) == ("succeeded", 1)
    assert "lease lost" not in worker.stderr
