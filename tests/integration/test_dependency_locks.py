"""What an open transaction that enqueues a dependent holds, and what it does not.

The enqueue locks its prerequisites' rows until the caller commits (runtime
rows of live ones, outcome rows of ended ones, ``FOR KEY SHARE``), so that
no prerequisite can end, or come back to life, unseen by the new edge. The
lock must not stop the heartbeat of a running prerequisite: a worker's
heartbeat renews all its leases in one call, and waiting for a user's
transaction would let every one of them run out.

Each session here is a connection of its own; a ``lock_timeout`` turns
"would wait" into an error the test can see, with no timing involved.
"""

from __future__ import annotations

import json

import psycopg
import pytest
from demo.jobs import add

from django_workhorse import Admin
from django_workhorse.db import store

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])

ERROR = json.dumps({"type": "ValueError", "message": "boom"})


def enqueue_dependent(conn: psycopg.Connection, prerequisite: int, policy: str) -> int:
    """Enqueue a dependent of ``prerequisite`` in ``conn``'s open transaction."""
    doc = [
        {
            "name": add.name,
            "queue": "default",
            "payload": {"a": 1, "b": 1},
            "depends_on": [prerequisite],
            "dependency_policy": policy,
        }
    ]
    row = conn.execute("SELECT job_id FROM workhorse_enqueue_many_v1(%s)", [json.dumps(doc)])
    return row.fetchone()[0]


def test_a_heartbeat_is_not_held_up_by_an_open_enqueue_of_a_dependent(pg_connect):
    prerequisite = add.options(queue="locks-hb").enqueue(a=1, b=2)
    worker = pg_connect()
    (claimed,) = store.claim_many(worker.cursor(), "hb-worker", ["locks-hb"], [1], 30)
    user = pg_connect()
    user.autocommit = False
    enqueue_dependent(user, prerequisite.id, "all_succeeded")

    worker.execute("SET lock_timeout = '2s'")
    renewed = worker.execute(
        "SELECT renewed FROM workhorse_heartbeat_many_v1(%s, %s, %s, 30)",
        ["hb-worker", [claimed.job_id], [claimed.fence]],
    ).fetchall()

    assert renewed == [(True,)]
    user.commit()
    assert Admin().get_job(prerequisite.id).dependents[0].state == "blocked"


def test_a_finish_of_the_prerequisite_waits_for_the_open_enqueue(pg_connect):
    """The lock the heartbeat no longer waits for is still there for a finish."""
    prerequisite = add.options(queue="locks-finish").enqueue(a=1, b=2)
    worker = pg_connect()
    (claimed,) = store.claim_many(worker.cursor(), "fin-worker", ["locks-finish"], [1], 30)
    user = pg_connect()
    user.autocommit = False
    enqueue_dependent(user, prerequisite.id, "all_succeeded")

    worker.execute("SET lock_timeout = '200ms'")
    with pytest.raises(psycopg.errors.LockNotAvailable):
        store.succeed_many(
            worker.cursor(), "fin-worker", [claimed.job_id], [claimed.fence], ["null"]
        )


def test_an_operator_retry_waits_for_an_open_enqueue_that_counted_the_job_as_ended(pg_connect):
    """A failed prerequisite counts at once; a retry of it must not slip in
    between that count and the commit (the dependent would wait forever for an
    end it will never hear of)."""
    prerequisite = add.options(queue="locks-retry").enqueue(a=1, b=2)
    worker = pg_connect()
    (claimed,) = store.claim_many(worker.cursor(), "retry-worker", ["locks-retry"], [1], 30)
    (failed,) = store.fail_many(
        worker.cursor(),
        "retry-worker",
        [claimed.job_id],
        [claimed.fence],
        [ERROR],
        ["failed"],
        [False],
        [None],
    )
    assert failed.ok and not failed.will_retry
    user = pg_connect()
    user.autocommit = False
    dependent = enqueue_dependent(user, prerequisite.id, "all_finished")

    operator = pg_connect()
    operator.execute("SET lock_timeout = '200ms'")
    with pytest.raises(psycopg.errors.LockNotAvailable):
        operator.execute("SELECT * FROM workhorse_retry_v1(%s)", [prerequisite.id])

    user.commit()
    operator.execute("SELECT * FROM workhorse_retry_v1(%s)", [prerequisite.id])
    # Released by the failure it counted; the retry runs the prerequisite again.
    assert Admin().get_job(dependent).state == "ready"
    assert Admin().get_job(prerequisite.id).state == "ready"
