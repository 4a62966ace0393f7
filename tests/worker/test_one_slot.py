"""One slot in all: the handler's thread writes its success with the next
claim and runs the job it gets (``Worker._carry_on``), while the claim loop
keeps the timeouts, the stops and everything else it does.

In process, with real threads and PostgreSQL; gates decide when handlers
return, so nothing here depends on how fast the machine is.
"""

from __future__ import annotations

import uuid

import pytest

from django_workhorse.operations import metrics
from django_workhorse.worker import tracing
from tests.helpers import poll_until
from tests.worker import jobs
from tests.worker.conftest import IN_PROCESS

pytestmark = IN_PROCESS

QUEUE = "inproc.gated"


@pytest.fixture(autouse=True)
def plain_claims(monkeypatch):
    """Tracing and metrics off, whatever earlier tests in this process switched
    on: successes ride with the plain claim only."""
    monkeypatch.setattr(tracing, "provider_configured", lambda: False)
    monkeypatch.setattr(metrics, "_metrics", None)


def gate_name() -> str:
    return f"gate-{uuid.uuid4().hex[:8]}"


def wait(predicate, what: str, timeout: float = 30.0):
    return poll_until(predicate, timeout=timeout, interval=0.01, what=what)


def states_of(cursor, ids: list[int]) -> list[str | None]:
    cursor.execute(
        "SELECT coalesce(r.state, o.state) FROM unnest(%s::bigint[]) WITH ORDINALITY AS j(id, n)"
        " LEFT JOIN workhorse_job_runtime r ON r.job_id = j.id"
        " LEFT JOIN workhorse_job_outcome o ON o.job_id = j.id ORDER BY j.n",
        [ids],
    )
    return [row[0] for row in cursor.fetchall()]


def attempts_of(cursor, ids: list[int]) -> dict[int, list[str]]:
    cursor.execute(
        "SELECT job_id, outcome FROM workhorse_attempt_history"
        " WHERE job_id = ANY(%s) ORDER BY job_id, attempt",
        [ids],
    )
    found: dict[int, list[str]] = {job_id: [] for job_id in ids}
    for job_id, outcome in cursor.fetchall():
        found[job_id].append(outcome)
    return found


def count_carry_ons(worker) -> list[bool]:
    """Record, from now on, whether each carry-on of ``worker`` got a job."""
    carried: list[bool] = []
    carry_on = worker._carry_on

    def counting(item):
        next_run = carry_on(item)
        carried.append(next_run is not None)
        return next_run

    worker._carry_on = counting
    return carried


def one_slot_held_by_a_gated_job(start_worker, value: int):
    """A one-slot worker running a job that waits on a gate, and the carry-ons
    counted from then on: (running worker, the job's id, its gate, carry-ons)."""
    first = gate_name()
    head = jobs.gated.enqueue(gate_name=first, value=value).id
    # The loop's own wait is a minute long: whatever happens in time happens
    # on the handler's thread.
    running = start_worker({QUEUE: 1}, POLL_INTERVAL=60)
    wait(lambda: running.ledger.counts()["running"] == 1, "the first job to start")
    return running, head, first, count_carry_ons(running.worker)


def test_each_success_claims_the_next_job_from_the_handlers_thread(start_worker, cursor):
    running, head, first, carried = one_slot_held_by_a_gated_job(start_worker, 0)
    ids = [head] + [h.id for h in jobs.gated.enqueue_many([{"value": n} for n in range(1, 6)])]

    jobs.gate(first).set()

    wait(lambda: states_of(cursor, ids) == ["succeeded"] * 6, "every job to succeed")
    wait(lambda: running.ledger.counts()["busy"] == 0, "the slot to be given back")
    # Five successes brought the next job with them; the sixth found none
    # and gave the slot back to the loop.
    assert carried == [True] * 5 + [False]
    assert attempts_of(cursor, ids) == {job_id: ["succeeded"] for job_id in ids}
    cursor.execute(
        "SELECT result FROM workhorse_job_outcome WHERE job_id = ANY(%s) ORDER BY job_id", [ids]
    )
    assert [row[0] for row in cursor.fetchall()] == ["0", "1", "2", "3", "4", "5"]
    assert running.stop() == 0
    assert running.ledger.counts() == {"running": 0, "writing": 0, "holding": 0, "busy": 0}


def test_a_job_the_handlers_thread_claimed_still_times_out(start_worker, cursor):
    # Only the carried-on run's deadline can end it before the loop looks.
    running, head, first, carried = one_slot_held_by_a_gated_job(start_worker, 1)
    hold = gate_name()
    slow = jobs.gated.options(timeout=0.2).enqueue(gate_name=hold, value=2).id

    jobs.gate(first).set()

    wait(lambda: states_of(cursor, [slow]) == ["failed"], "the timeout to be recorded")
    assert carried == [True]
    assert attempts_of(cursor, [head, slow]) == {head: ["succeeded"], slow: ["timed_out"]}
    # The abandoned handler keeps the one slot until it returns.
    wait(
        lambda: running.ledger.counts() == {"running": 0, "writing": 0, "holding": 1, "busy": 1},
        "the timed-out attempt to be written while its handler goes on",
    )
    jobs.gate(hold).set()
    wait(lambda: running.ledger.counts()["busy"] == 0, "the slot to free")
    assert carried == [True]  # a timed-out run carries nothing on
    assert running.stop() == 0


def test_a_stop_ends_the_chain_and_every_job_is_run_once_or_left_ready(start_worker, cursor):
    running, head, first, carried = one_slot_held_by_a_gated_job(start_worker, 0)
    hold = gate_name()
    held = jobs.gated.enqueue(gate_name=hold, value=1).id
    rest = [h.id for h in jobs.gated.enqueue_many([{"value": n} for n in range(2, 12)])]

    jobs.gate(first).set()
    wait(lambda: states_of(cursor, [held]) == ["active"], "the second job to start")
    running.worker.request_stop()
    jobs.gate(hold).set()

    assert running.stop() == 0
    assert carried == [True]
    assert states_of(cursor, [head, held]) == ["succeeded", "succeeded"]
    # Once stopping, the success went its own way and nothing more was claimed.
    assert states_of(cursor, rest) == ["ready"] * len(rest)
    assert attempts_of(cursor, rest) == {job_id: [] for job_id in rest}
    assert running.ledger.counts() == {"running": 0, "writing": 0, "holding": 0, "busy": 0}
