"""The Worker driven in the test process: real threads, real PostgreSQL.

These cover what the subprocess tests cannot look inside: the claim linger,
the pause while results wait for the writer, a timed-out sync run that keeps
its slot, a lease lost while a run waits for the writer, and the release of
running jobs before the writer's last flush at shutdown.
"""

from __future__ import annotations

import logging
import uuid

import psycopg

from django_workhorse.worker.linger import Linger
from tests.helpers import poll_until
from tests.worker import jobs
from tests.worker.conftest import IN_PROCESS

pytestmark = IN_PROCESS

LOST_WHILE_RUNNING = "lease lost while running"
LOST_AT_WRITE = "lease lost (fence"


def gate_name() -> str:
    return f"gate-{uuid.uuid4().hex[:8]}"


def wait(predicate, what: str, timeout: float = 30.0):
    return poll_until(predicate, timeout=timeout, interval=0.01, what=what)


def state_of(cursor, job_id: int) -> str | None:
    cursor.execute(
        "SELECT coalesce((SELECT state FROM workhorse_job_runtime WHERE job_id = %s),"
        " (SELECT state FROM workhorse_job_outcome WHERE job_id = %s))",
        [job_id, job_id],
    )
    return cursor.fetchone()[0]


def claims_of(cursor, ids: list[int]) -> list[int]:
    """How many jobs each claim took, in claim order (one claim is one
    transaction, so its events share their ``at``)."""
    cursor.execute(
        "SELECT count(*) FROM unnest(%s::bigint[]) AS j(id),"
        " workhorse_job_timeline_v1(j.id) AS t WHERE t.kind = 'claimed'"
        " GROUP BY t.at ORDER BY t.at",
        [ids],
    )
    return [row[0] for row in cursor.fetchall()]


def lock_runtime_row(pg_connect, job_id: int) -> psycopg.Connection:
    """A session holding the runtime row of ``job_id`` locked, so that every
    finish of that job waits until the session commits."""
    conn = pg_connect()
    conn.autocommit = False
    conn.execute("SELECT 1 FROM workhorse_job_runtime WHERE job_id = %s FOR UPDATE", [job_id])
    return conn


def test_a_linger_ends_as_soon_as_the_count_reaches_its_target():
    import threading

    linger = Linger(seconds=60)
    count = [0]
    lock = threading.Lock()

    def arrive() -> None:
        with lock:
            count[0] += 1
            linger.arrived(count[0])

    threads = [threading.Thread(target=arrive) for _ in range(3)]
    waiter = threading.Thread(target=linger.wait, args=(3, lambda: count[0]))
    waiter.start()
    for thread in threads:
        thread.start()
    waiter.join(30)
    assert not waiter.is_alive(), "the linger waited on although all three arrived"
    assert linger.arrived(1), "outside a wait every arrival reaches the target"


def test_a_burst_that_frees_every_slot_is_refilled_by_one_claim(start_worker, cursor):
    first, second = gate_name(), gate_name()
    ids = [jobs.gated.enqueue(gate_name=first).id for _ in range(4)]
    running = start_worker({"inproc.gated": 4})
    # A long linger, so that a slow machine cannot end it early.
    running.worker._linger = Linger(seconds=60)
    wait(lambda: running.ledger.counts()["running"] == 4, "the first four jobs to start")
    ids += [jobs.gated.enqueue(gate_name=second).id for _ in range(4)]
    jobs.gate(first).set()
    wait(
        lambda: running.ledger.counts()["running"] == 4 and len(claims_of(cursor, ids)) == 2,
        "the next four jobs to start",
    )
    jobs.gate(second).set()
    wait(lambda: all(state_of(cursor, i) == "succeeded" for i in ids), "every job to succeed")
    running.stop()
    assert claims_of(cursor, ids) == [4, 4]


def test_claims_pause_while_as_many_results_wait_as_there_are_slots(
    start_worker, cursor, pg_connect
):
    hold = gate_name()
    a, b = (jobs.gated.enqueue(gate_name=hold, value=n).id for n in (1, 2))
    running = start_worker({"inproc.gated": 2})
    wait(lambda: running.ledger.counts()["running"] == 2, "both jobs to start")
    blocker = lock_runtime_row(pg_connect, a)
    blocker.execute("SELECT 1 FROM workhorse_job_runtime WHERE job_id = %s FOR UPDATE", [b])
    jobs.gate(hold).set()
    wait(
        lambda: running.ledger.counts() == {"running": 0, "writing": 2, "holding": 0, "busy": 0},
        "both results to wait for the writer",
    )
    later = jobs.gated.enqueue(value=3).id
    for _ in range(20):  # every pass of the loop sees the backlog and claims nothing
        running.worker.wake()
        wait(lambda: not running.worker._wake.is_set(), "the loop to take the wake-up")
    assert state_of(cursor, later) == "ready"
    blocker.commit()
    wait(lambda: state_of(cursor, later) == "succeeded", "the claims to go on")
    assert (state_of(cursor, a), state_of(cursor, b)) == ("succeeded", "succeeded")
    running.stop()
    assert running.ledger.counts() == {"running": 0, "writing": 0, "holding": 0, "busy": 0}


def test_a_timed_out_sync_run_is_recorded_at_once_and_keeps_its_slot(start_worker, cursor):
    hold = gate_name()
    slow = jobs.gated.options(timeout=0.2).enqueue(gate_name=hold, value=1).id
    running = start_worker({"inproc.gated": 1})
    wait(lambda: state_of(cursor, slow) == "failed", "the timeout to be recorded")
    cursor.execute("SELECT outcome FROM workhorse_attempt_history WHERE job_id = %s", [slow])
    assert cursor.fetchall() == [("timed_out",)]
    # The thread still runs: the one slot stays taken, so the next job waits.
    assert running.ledger.counts() == {"running": 0, "writing": 0, "holding": 1, "busy": 1}
    after = jobs.gated.enqueue(value=2).id
    running.worker.wake()
    assert state_of(cursor, after) == "ready"
    jobs.gate(hold).set()
    wait(lambda: state_of(cursor, after) == "succeeded", "the slot to free")
    running.stop()
    cursor.execute("SELECT state, result FROM workhorse_job_outcome WHERE job_id = %s", [slow])
    assert cursor.fetchone()[0] == "failed"  # the late return value was not written


def test_a_lease_lost_while_the_result_waits_is_reported_once_by_the_refused_write(
    start_worker, cursor, pg_connect, caplog
):
    caplog.set_level(logging.WARNING, logger="django_workhorse.worker")
    hold = gate_name()
    job_id = jobs.gated.enqueue(gate_name=hold).id
    running = start_worker({"inproc.gated": 1}, LOCK_DURATION=30, LOCK_RENEW_INTERVAL=0.05)
    wait(lambda: running.ledger.counts()["running"] == 1, "the job to start")
    # Another run takes the job while this run's result waits for the
    # writer: the writer and the heartbeat both wait for the lock. (Stall
    # recovery no longer takes a live worker's job: the thief plays a run
    # that claimed it after a recovery, with the next fence.)
    thief = lock_runtime_row(pg_connect, job_id)
    jobs.gate(hold).set()
    wait(lambda: running.ledger.counts()["writing"] == 1, "the result to wait for the writer")
    thief.execute(
        "UPDATE workhorse_job_runtime SET worker_id = 'another-worker', fence = fence + 1"
        " WHERE job_id = %s",
        [job_id],
    )
    thief.commit()
    wait(lambda: LOST_AT_WRITE in caplog.text, "the refused write to be reported")
    running.stop()
    messages = [r.getMessage() for r in caplog.records]
    assert sum(LOST_AT_WRITE in m for m in messages) == 1, messages
    assert not [m for m in messages if LOST_WHILE_RUNNING in m], messages


def test_shutdown_releases_running_jobs_before_the_writer_flushes(start_worker, cursor, pg_connect):
    done, hold = gate_name(), gate_name()
    finished = jobs.gated.enqueue(gate_name=done, value=1).id
    still_running = jobs.gated.enqueue(gate_name=hold, value=2).id
    running = start_worker({"inproc.gated": 2}, SHUTDOWN_GRACE=0.1)
    wait(lambda: running.ledger.counts()["running"] == 2, "both jobs to start")
    blocker = lock_runtime_row(pg_connect, finished)
    jobs.gate(done).set()
    wait(lambda: running.ledger.counts()["writing"] == 1, "the result to wait for the writer")
    running.worker.request_stop()
    # The writer cannot flush (the row is locked), yet the running job is
    # already back in ready: the release did not wait for the flush.
    wait(lambda: state_of(cursor, still_running) == "ready", "the running job to be released")
    assert state_of(cursor, finished) == "active"
    blocker.commit()
    assert running.stop() == 0
    assert state_of(cursor, finished) == "succeeded"
    cursor.execute(
        "SELECT kind FROM workhorse_job_timeline_v1(%s) WHERE source = 'event'", [still_running]
    )
    assert [k for (k,) in cursor.fetchall()] == ["enqueued", "claimed", "released"]
    jobs.gate(hold).set()


def test_a_stopped_worker_has_ended_its_listener_and_heartbeat_when_run_returns(
    start_worker, cursor
):
    running = start_worker({"inproc.gated": 1})
    wait(lambda: running.worker._listener.delivering.is_set(), "the listener to hear its probe")
    assert running.stop() == 0
    # Their connections closed with them (the server takes a moment to see it).
    assert not running.worker._listener.is_alive()
    assert not running.worker._heartbeat.is_alive()

    def sessions() -> list[str]:
        cursor.execute(
            "SELECT application_name FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name LIKE 'workhorse-%%'"
        )
        return [name for (name,) in cursor.fetchall()]

    wait(lambda: sessions() == [], "the worker's sessions to end", timeout=10)
