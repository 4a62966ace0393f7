"""Two workers ending the last two prerequisites of one dependent at the same
moment settle it exactly once: released once (one 'unblocked' event), or
canceled once, never left blocked and never released twice.

Each worker is a connection of its own, finishing its prerequisite from a
thread of its own; the race is run many times.
"""

from __future__ import annotations

import json
import threading

import pytest
from demo.jobs import add
from django.db import connection

from django_workhorse import Admin
from django_workhorse.db import store

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])

ROUNDS = 40
ERROR = json.dumps({"type": "ValueError", "message": "boom"})


def end(conn, worker: str, job_id: int, fence: int, outcome: str) -> None:
    with conn.cursor() as cursor:
        if outcome == "succeeded":
            assert store.succeed_many(cursor, worker, [job_id], [fence], ["1"]) == [(job_id, True)]
        else:
            (failed,) = store.fail_many(
                cursor, worker, [job_id], [fence], [ERROR], ["failed"], [False], [None]
            )
            assert failed.ok


def diamond_tip(policy: str, round_: int) -> tuple[int, list[tuple[int, int]]]:
    """Two claimed prerequisites and their dependent: (dependent id, [(id, fence)])."""
    queue = f"race-{round_}"
    first, second = add.options(queue=queue).enqueue_many([{"a": 1, "b": 1}, {"a": 2, "b": 2}])
    dependent = add.options(depends_on=[first, second], dependency_policy=policy).enqueue(a=0, b=0)
    with connection.cursor() as cursor:
        claimed = store.claim_many(cursor, "claimer", [queue], [2], 60)
    tickets = sorted((c.job_id, c.fence) for c in claimed)
    assert [t[0] for t in tickets] == [first.id, second.id]
    return dependent.id, tickets


def settled_records(job_id: int) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT kind FROM workhorse_job_event WHERE job_id = %s"
            " AND kind IN ('unblocked', 'canceled') ORDER BY id",
            [job_id],
        )
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.parametrize(
    ("policy", "outcomes", "expected"),
    [
        ("all_succeeded", ("succeeded", "succeeded"), ("ready", ["unblocked"])),
        ("all_finished", ("failed", "succeeded"), ("ready", ["unblocked"])),
        ("any_succeeded", ("failed", "failed"), ("canceled", ["canceled"])),
    ],
)
def test_ending_the_last_two_prerequisites_at_once_settles_the_dependent_once(
    pg_connect, policy, outcomes, expected
):
    workers = [pg_connect(), pg_connect()]
    for round_ in range(ROUNDS):
        dependent, tickets = diamond_tip(policy, round_)
        start = threading.Barrier(2)
        errors: list[BaseException] = []

        def finish(index: int, tickets=tickets, start=start, errors=errors) -> None:
            try:
                start.wait(5)
                job_id, fence = tickets[index]
                end(workers[index], "claimer", job_id, fence, outcomes[index])
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=finish, args=(i,)) for i in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert errors == []

        job = Admin().get_job(dependent)
        assert (job.state, settled_records(dependent)) == expected, f"round {round_}"


def test_the_second_finish_waits_for_the_first_and_sees_its_count(pg_connect):
    """The interleaving the race is about, forced: the first finish holds the
    dependent's row until the second is seen waiting for it, then commits."""
    dependent, tickets = diamond_tip("all_succeeded", 0)
    first, second = pg_connect(), pg_connect()
    second_pid = second.info.backend_pid
    with first.transaction():
        end(first, "claimer", *tickets[0], "succeeded")
        waiter = threading.Thread(target=end, args=(second, "claimer", *tickets[1], "succeeded"))
        waiter.start()
        observer = pg_connect()
        for _ in range(500):
            row = observer.execute(
                "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [second_pid]
            ).fetchone()
            if row and row[0] == "Lock":
                break
            threading.Event().wait(0.01)
        else:
            pytest.fail("the second finish never waited for the dependent's row")
    waiter.join(30)

    assert (Admin().get_job(dependent).state, settled_records(dependent)) == (
        "ready",
        ["unblocked"],
    )
