"""Two cancellation cascades that cross do not deadlock.

Cancel A and cancel B at once, over this graph (ids in enqueue order):

    A ── P (all_succeeded) ── J7 (all_finished, also waits for B)
    B ── Q (all_succeeded) ── J8 (all_finished, also waits for A)

A's cascade reaches P and J8 first and J7 through P; B's reaches Q and J7
first and J8 through Q. Locking one generation at a time, A's cascade held
J8 and asked for J7 while B's held J7 and asked for J8: a deadlock. The
settlement now locks everything a cascade can reach in one id-ordered
statement before it settles anything.

The interleaving is forced: a trigger makes A's cascade wait on an advisory
lock the test holds, right after it has taken its locks (and, before the
fix, while it held J8 but not J7), until B's cascade is seen waiting for a
row lock.
"""

from __future__ import annotations

import threading

import pytest
from demo.jobs import add

from django_workhorse import Admin

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])

PAUSE_KEY = 815_001


@pytest.fixture
def pause_on_outcome(pg_connect):
    """install(job_id): a trigger that makes the transaction writing job_id's
    outcome wait for PAUSE_KEY, which the yielded connection holds."""
    admin = pg_connect()

    def install(job_id: int) -> None:
        admin.execute(
            "CREATE FUNCTION test_pause_on_outcome() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN PERFORM pg_advisory_xact_lock({PAUSE_KEY}); RETURN NEW; END $$"
        )
        admin.execute(
            "CREATE TRIGGER test_pause_on_outcome AFTER INSERT ON workhorse_job_outcome"
            f" FOR EACH ROW WHEN (NEW.job_id = {int(job_id)})"
            " EXECUTE FUNCTION test_pause_on_outcome()"
        )

    yield install, admin
    admin.execute("DROP TRIGGER IF EXISTS test_pause_on_outcome ON workhorse_job_outcome")
    admin.execute("DROP FUNCTION IF EXISTS test_pause_on_outcome()")


def waiting_for(observer, pid: int, kind: str | None = None) -> bool:
    row = observer.execute(
        "SELECT wait_event_type, wait_event FROM pg_stat_activity WHERE pid = %s", [pid]
    ).fetchone()
    return bool(row) and row[0] == "Lock" and (kind is None or row[1] == kind)


def unblocked_events(job_id: int) -> int:
    return sum(1 for e in Admin().get_job_timeline(job_id).items if e.kind == "unblocked")


def test_two_crossing_cancel_cascades_do_not_deadlock(pg_connect, pause_on_outcome, wait_until):
    install, controller = pause_on_outcome
    a, b = add.options(queue="cascade").enqueue_many([{"a": 1, "b": 1}, {"a": 2, "b": 2}])
    p = add.options(queue="cascade", depends_on=[a.id]).enqueue(a=0, b=0)
    q = add.options(queue="cascade", depends_on=[b.id]).enqueue(a=0, b=0)
    j7 = add.options(
        queue="cascade", depends_on=[b.id, p.id], dependency_policy="all_finished"
    ).enqueue(a=0, b=0)
    j8 = add.options(
        queue="cascade", depends_on=[a.id, q.id], dependency_policy="all_finished"
    ).enqueue(a=0, b=0)
    assert a.id < b.id < p.id < q.id < j7.id < j8.id
    install(p.id)
    first, second = pg_connect(), pg_connect()
    errors: list[BaseException] = []

    def cancel(conn, job_id: int) -> None:
        try:
            conn.execute("SET lock_timeout = '20s'")
            conn.execute("SELECT * FROM workhorse_cancel_v1(%s)", [job_id])
        except BaseException as exc:
            errors.append(exc)

    controller.execute("SELECT pg_advisory_lock(%s)", [PAUSE_KEY])
    try:
        cancel_a = threading.Thread(target=cancel, args=(first, a.id))
        cancel_a.start()
        # A's cascade is paused writing P's outcome, its locks taken.
        wait_until(lambda: waiting_for(controller, first.info.backend_pid, "advisory"), timeout=10)
        cancel_b = threading.Thread(target=cancel, args=(second, b.id))
        cancel_b.start()
        # B's cascade waits for a row A's cascade holds.
        wait_until(lambda: waiting_for(controller, second.info.backend_pid), timeout=10)
    finally:
        controller.execute("SELECT pg_advisory_unlock(%s)", [PAUSE_KEY])
    cancel_a.join(30)
    cancel_b.join(30)

    assert errors == []
    admin = Admin()
    assert [admin.get_job(j.id).state for j in (a, b, p, q)] == ["canceled"] * 4
    assert [admin.get_job(j.id).state for j in (j7, j8)] == ["ready", "ready"]
    assert [unblocked_events(j.id) for j in (j7, j8)] == [1, 1]
