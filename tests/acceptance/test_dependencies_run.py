"""Job dependencies with real workers: a diamond runs in order (handler
starts against the finishes of their prerequisites), a failure
cancels what depends on it (all the way down), the policies behave as
documented (after an operator's cancel of a ready or a scheduled
prerequisite too), and fan-in and fan-out of 5,000 jobs release correctly while
two workers drain them."""

from __future__ import annotations

import pytest
from demo.jobs import noop
from django.db import connection, transaction
from jobtests.jobs import doomed, gather, record

from django_workhorse import Admin

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

QUEUES = ("--queues", "jobtests.record,jobtests.doomed,jobtests.gather", "--concurrency", "4")


def runs(job_ids: list[int]) -> dict[int, tuple]:
    """(state, start, end) per terminal job, from the database: start is when
    the job's handler first started (its ``RunRecord``, None for a job that
    never ran) and end the finish of its succeeded or failed attempt.

    Causal times, not claim times: ``now()`` is when a transaction began,
    and a claim's later statements take fresh snapshots, so a claim whose
    transaction began a moment before the finish it waited for carries the
    earlier time. A handler starts after its claim committed, which was
    after the prerequisite's end committed, whose ``finished_at`` is earlier
    still; the clock is the machine's in both.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT o.job_id, o.state,"
            " (SELECT min(r.started_at) FROM jobtests_runrecord r WHERE r.job_id = o.job_id),"
            " (SELECT max(h.finished_at) FROM workhorse_attempt_history h"
            "  WHERE h.job_id = o.job_id AND h.outcome IN ('succeeded', 'failed'))"
            " FROM workhorse_job_outcome o WHERE o.job_id = ANY(%s)",
            [job_ids],
        )
        return {row[0]: row[1:] for row in cursor.fetchall()}


def all_terminal(job_ids: list[int]):
    def check():
        found = runs(job_ids)
        return found if len(found) == len(job_ids) else None

    return check


def test_a_diamond_enqueued_in_one_transaction_runs_in_order(start_worker, wait_until):
    with transaction.atomic():
        a = record.enqueue(label="a")
        b = record.options(depends_on=[a]).enqueue(label="b")
        c = record.options(depends_on=[a]).enqueue(label="c")
        d = gather.options(depends_on=[b, c]).enqueue(label="d")
    assert Admin().get_job(d.id).state == "blocked"
    worker = start_worker(*QUEUES)

    found = wait_until(all_terminal([a.id, b.id, c.id, d.id]), timeout=30, what="the diamond")
    assert worker.stop() == 0

    assert {job: row[0] for job, row in found.items()} == dict.fromkeys(
        [a.id, b.id, c.id, d.id], "succeeded"
    )
    (_, _, a_end), (_, b_start, b_end), (_, c_start, c_end), (_, d_start, _) = (
        found[a.id],
        found[b.id],
        found[c.id],
        found[d.id],
    )
    assert a_end < b_start and a_end < c_start
    assert max(b_end, c_end) < d_start
    # D read its prerequisites' results through its context.
    assert Admin().get_job(d.id).result == {
        str(b.id): {"state": "succeeded", "result": {"pid": worker_pid(b.id), "attempt": 1}},
        str(c.id): {"state": "succeeded", "result": {"pid": worker_pid(c.id), "attempt": 1}},
    }


def worker_pid(job_id: int) -> int:
    return Admin().get_job(job_id).result["pid"]


def test_a_failed_prerequisite_cancels_the_rest_of_the_diamond(start_worker, wait_until):
    with transaction.atomic():
        a = doomed.enqueue()
        b = record.options(depends_on=[a]).enqueue(label="b")
        c = record.options(depends_on=[a]).enqueue(label="c")
        d = record.options(depends_on=[b, c]).enqueue(label="d")
    worker = start_worker(*QUEUES)

    found = wait_until(all_terminal([a.id, b.id, c.id, d.id]), timeout=30, what="the diamond")
    assert worker.stop() == 0

    assert [found[j][0] for j in (a.id, b.id, c.id, d.id)] == [
        "failed",
        "canceled",
        "canceled",
        "canceled",
    ]
    # None of the canceled jobs ran.
    assert [found[j][1] for j in (b.id, c.id, d.id)] == [None, None, None]
    errors = {j: Admin().get_job(j).error for j in (b.id, c.id, d.id)}
    assert errors[b.id]["message"] == (
        f"prerequisite job #{a.id} failed (dependency_policy all_succeeded)"
    )
    assert (errors[c.id]["prerequisite"], errors[c.id]["prerequisite_state"]) == (a.id, "failed")
    assert (errors[d.id]["prerequisite"], errors[d.id]["prerequisite_state"]) == (
        b.id,
        "canceled",
    )


def test_all_finished_runs_the_dependent_after_a_failure(start_worker, wait_until):
    with transaction.atomic():
        a = doomed.enqueue()
        b = record.options(depends_on=[a]).enqueue(label="b")
        d = gather.options(depends_on=[a, b], dependency_policy="all_finished").enqueue()
    worker = start_worker(*QUEUES)

    found = wait_until(all_terminal([a.id, b.id, d.id]), timeout=30, what="the jobs terminal")
    assert worker.stop() == 0

    assert [found[j][0] for j in (a.id, b.id, d.id)] == ["failed", "canceled", "succeeded"]
    assert found[d.id][1] > found[a.id][2]
    assert {k: v["state"] for k, v in Admin().get_job(d.id).result.items()} == {
        str(a.id): "failed",
        str(b.id): "canceled",
    }


def test_any_succeeded_runs_after_one_success_and_is_canceled_after_none(start_worker, wait_until):
    with transaction.atomic():
        failing, succeeding = doomed.enqueue(), record.enqueue(label="ok")
        lucky = record.options(
            depends_on=[failing, succeeding], dependency_policy="any_succeeded"
        ).enqueue(label="lucky")
        other = doomed.enqueue()
        unlucky = record.options(
            depends_on=[failing, other], dependency_policy="any_succeeded"
        ).enqueue(label="unlucky")
    worker = start_worker(*QUEUES)

    ids = [failing.id, succeeding.id, lucky.id, other.id, unlucky.id]
    found = wait_until(all_terminal(ids), timeout=30, what="the jobs terminal")
    assert worker.stop() == 0

    assert (found[lucky.id][0], found[unlucky.id][0]) == ("succeeded", "canceled")
    assert found[lucky.id][1] > found[succeeding.id][2]
    assert (
        Admin()
        .get_job(unlucky.id)
        .error["message"]
        .startswith("none of its prerequisites succeeded (dependency_policy any_succeeded)")
    )


FAN = 5_000


def test_fan_in_and_fan_out_of_5000_jobs_release_while_two_workers_drain(start_worker, wait_until):
    with transaction.atomic():
        many = noop.enqueue_many([{}] * FAN)
        fan_in = record.options(depends_on=many).enqueue(label="fan-in")
        one = record.enqueue(label="one")
        fan_out = record.options(depends_on=[one]).enqueue_many([{"label": "fan-out"}] * FAN)
    assert Admin().get_job(fan_in.id).pending_dependencies == FAN
    # 20 slots each: with persistent connections a slot holds one, and two
    # workers of 50 (plus their own sessions) outgrew max_connections = 100.
    flags = ("--queues", "bench,jobtests.record", "--concurrency", "20")
    workers = [start_worker(*flags, persistent_connections=True, ready=False) for _ in range(2)]
    for worker in workers:
        worker.wait_ready()

    def drained():
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM workhorse_job_runtime")
            return cursor.fetchone()[0] == 0

    wait_until(drained, timeout=240, interval=0.5, what="every job finished")
    for worker in workers:
        assert worker.stop() == 0

    with connection.cursor() as cursor:
        cursor.execute("SELECT o.state, count(*) FROM workhorse_job_outcome o GROUP BY o.state")
        assert dict(cursor.fetchall()) == {"succeeded": 2 * FAN + 2}
        cursor.execute(
            "SELECT max(h.finished_at) FROM workhorse_attempt_history h"
            " WHERE h.job_id = ANY(%s) AND h.outcome = 'succeeded'",
            [[h.id for h in many]],
        )
        last_prerequisite_end = cursor.fetchone()[0]
        cursor.execute(
            "SELECT min(r.started_at) FROM jobtests_runrecord r WHERE r.job_id = ANY(%s)",
            [[h.id for h in fan_out]],
        )
        first_fan_out_start = cursor.fetchone()[0]
        cursor.execute(
            "SELECT count(*) FROM workhorse_attempt_history h WHERE h.job_id = ANY(%s)",
            [[h.id for h in fan_out]],
        )
        fan_out_attempts = cursor.fetchone()[0]
        cursor.execute(
            "SELECT kind, count(*) FROM workhorse_job_event WHERE kind = 'unblocked' GROUP BY kind"
        )
        assert dict(cursor.fetchall()) == {"unblocked": FAN + 1}
    fan_in_run = runs([fan_in.id])[fan_in.id]
    assert fan_in_run[1] > last_prerequisite_end
    assert first_fan_out_start > runs([one.id])[one.id][2]
    assert fan_out_attempts == FAN


def test_cancelling_a_ready_and_a_scheduled_prerequisite_settles_their_dependents(
    start_worker, wait_until
):
    """The prerequisites wait in a queue no worker serves (one ready, one an
    hour ahead); their dependents are in the worker's queue."""
    worker = start_worker(*QUEUES)
    held = record.options(queue="jobtests.held")
    ready = held.enqueue(label="ready prerequisite")
    scheduled = held.options(delay=3600).enqueue(label="scheduled prerequisite")
    strict = record.options(depends_on=[ready]).enqueue(label="strict")
    lenient = record.options(depends_on=[ready], dependency_policy="all_finished").enqueue(
        label="lenient"
    )
    hopeful = record.options(depends_on=[scheduled], dependency_policy="any_succeeded").enqueue(
        label="hopeful"
    )
    patient = record.options(depends_on=[scheduled], dependency_policy="all_finished").enqueue(
        label="patient"
    )
    below = record.options(depends_on=[strict]).enqueue(label="below strict")
    dependents = [strict.id, lenient.id, hopeful.id, patient.id, below.id]
    assert {Admin().get_job(i).state for i in dependents} == {"blocked"}

    assert Admin().cancel(ready.id, reason="not needed", by="ops").changed
    assert Admin().cancel(scheduled.id, by="ops").changed

    found = wait_until(all_terminal(dependents), timeout=60, what="every dependent to end")
    assert worker.stop() == 0
    assert {i: found[i][0] for i in dependents} == {
        strict.id: "canceled",  # all_succeeded: a canceled prerequisite cancels it
        lenient.id: "succeeded",  # all_finished: a cancel is an end; it ran
        hopeful.id: "canceled",  # any_succeeded: its only prerequisite ended without success
        patient.id: "succeeded",
        below.id: "canceled",  # and so on down the graph
    }
    for job_id, cause in [(strict.id, ready.id), (hopeful.id, scheduled.id), (below.id, strict.id)]:
        error = Admin().get_job(job_id).error
        assert (error["prerequisite"], error["prerequisite_state"]) == (cause, "canceled")
        assert found[job_id][1] is None  # never claimed
    assert [Admin().get_job(i).error["state_before"] for i in (ready.id, scheduled.id)] == [
        "ready",
        "scheduled",
    ]
