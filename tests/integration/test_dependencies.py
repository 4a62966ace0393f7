"""Job dependencies in the store: a job enqueued with ``depends_on`` waits
``blocked`` until the end of its prerequisites settles it by its policy,
inside the transaction that writes that end."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from demo.jobs import add
from django.db import connection, transaction
from django.db.utils import IntegrityError

import django_workhorse as workhorse
from django_workhorse import Admin, InvalidJobOptionError, UnknownDependencyError, current_job
from django_workhorse.context import JobContext, reset_current, set_current
from django_workhorse.db import store
from django_workhorse.testing import run_jobs
from tests.factories import (
    ActiveJobFactory,
    BlockedJobFactory,
    FailedJobFactory,
    ReadyJobFactory,
    SucceededJobFactory,
)

pytestmark = pytest.mark.django_db

ERROR = json.dumps({"type": "ValueError", "message": "boom"})


def state(job_id: int) -> str:
    return Admin().get_job(job_id).state


def succeed(job, result: object = None) -> None:
    with connection.cursor() as cursor:
        done = store.succeed_many(cursor, job.worker, [job.id], [job.fence], [json.dumps(result)])
    assert done == [(job.id, True)]


def fail(job) -> None:
    with connection.cursor() as cursor:
        (failed,) = store.fail_many(
            cursor, job.worker, [job.id], [job.fence], [ERROR], ["failed"], [False], [None]
        )
    assert failed.ok and not failed.will_retry


def events(db_rows, job_id: int) -> list[tuple[str, dict]]:
    return [(e["kind"], json.loads(e["data"] or "null")) for e in db_rows.of_job(job_id)["events"]]


def test_a_job_with_an_unfinished_prerequisite_is_enqueued_blocked():
    first = ActiveJobFactory()
    handle = add.options(depends_on=[first.handle]).enqueue(a=1, b=2)

    job = Admin().get_job(handle.id)
    assert (job.state, job.pending_dependencies, job.dependency_policy) == (
        "blocked",
        1,
        "all_succeeded",
    )
    assert [(p.id, p.state) for p in job.prerequisites] == [(first.id, "active")]
    assert [(d.id, d.state) for d in Admin().get_job(first.id).dependents] == [
        (handle.id, "blocked")
    ]


def test_a_blocked_job_is_never_claimed():
    handle = BlockedJobFactory(queue="deps-blocked").handle

    with connection.cursor() as cursor:
        assert store.claim_many(cursor, "w", ["deps-blocked"], [10], 30) == []
    assert state(handle.id) == "blocked"


def test_the_success_of_the_last_prerequisite_releases_the_dependent(db_rows):
    first, second = ActiveJobFactory(), ActiveJobFactory()
    dependent = BlockedJobFactory(depends_on=[first.id, second.id])

    succeed(first)
    assert (state(dependent.id), Admin().get_job(dependent.id).pending_dependencies) == (
        "blocked",
        1,
    )
    succeed(second)

    assert state(dependent.id) == "ready"
    kind, data = events(db_rows, dependent.id)[-1]
    assert (kind, data["state"], data["prerequisite"]) == ("unblocked", "ready", second.id)


def test_a_released_job_whose_run_at_is_still_ahead_is_scheduled():
    first = ActiveJobFactory()
    dependent = BlockedJobFactory(depends_on=[first.id], delay=3600)

    succeed(first)

    assert state(dependent.id) == "scheduled"


def test_a_prerequisite_that_already_succeeded_counts_at_once():
    done = SucceededJobFactory()

    handle = add.options(depends_on=[done.id]).enqueue(a=1, b=2)

    assert state(handle.id) == "ready"


def test_a_prerequisite_that_already_failed_cancels_the_dependent_at_enqueue():
    failed = FailedJobFactory()

    handle = add.options(depends_on=[failed.id]).enqueue(a=1, b=2)

    job = Admin().get_job(handle.id)
    assert job.state == "canceled"
    assert (job.error["prerequisite"], job.error["prerequisite_state"]) == (failed.id, "failed")


def test_a_failed_prerequisite_cancels_its_dependents_and_theirs(db_rows):
    first = ActiveJobFactory()
    child = BlockedJobFactory(depends_on=[first.id])
    grandchild = BlockedJobFactory(depends_on=[child.id])

    fail(first)

    child_job, grandchild_job = Admin().get_job(child.id), Admin().get_job(grandchild.id)
    assert (child_job.state, grandchild_job.state) == ("canceled", "canceled")
    assert child_job.error == {
        "type": "django_workhorse.exceptions.JobCancelled",
        "message": f"prerequisite job #{first.id} failed (dependency_policy all_succeeded)",
        "reason": "dependency",
        "prerequisite": first.id,
        "prerequisite_state": "failed",
        "dependency_policy": "all_succeeded",
        "state_before": "blocked",
    }
    assert grandchild_job.error["message"] == (
        f"prerequisite job #{child.id} was canceled (dependency_policy all_succeeded)"
    )
    assert events(db_rows, grandchild.id)[-1][0] == "canceled"


def test_all_finished_releases_the_dependent_whatever_the_outcomes():
    first, second = ActiveJobFactory(), ActiveJobFactory()
    dependent = BlockedJobFactory(
        depends_on=[first.id, second.id], dependency_policy="all_finished"
    )

    fail(first)
    assert state(dependent.id) == "blocked"
    succeed(second)

    assert state(dependent.id) == "ready"


def test_any_succeeded_releases_the_dependent_at_the_first_success():
    first, second = ActiveJobFactory(), ActiveJobFactory()
    dependent = BlockedJobFactory(
        depends_on=[first.id, second.id], dependency_policy="any_succeeded"
    )

    succeed(second)

    assert state(dependent.id) == "ready"
    assert state(first.id) == "active"


def test_any_succeeded_cancels_the_dependent_once_all_ended_without_success():
    first, second = ActiveJobFactory(), ActiveJobFactory()
    dependent = BlockedJobFactory(
        depends_on=[first.id, second.id], dependency_policy="any_succeeded"
    )

    fail(first)
    assert state(dependent.id) == "blocked"
    fail(second)

    job = Admin().get_job(dependent.id)
    assert job.state == "canceled"
    assert job.error["message"] == (
        f"none of its prerequisites succeeded (dependency_policy any_succeeded); one of them, "
        f"job #{second.id}, ended failed"
    )


def test_a_dependency_on_an_unknown_job_is_refused_and_nothing_is_written(db_rows):
    known = ReadyJobFactory()
    before = db_rows.counts()

    with transaction.atomic():
        with pytest.raises(UnknownDependencyError) as refused:
            add.options(depends_on=[known.id, 987654321]).enqueue(a=1, b=2)
        # Refused before any write: the caller's transaction is still usable.
        assert Admin().get_job(known.id).state == "ready"

    assert "#987654321" in str(refused.value)
    assert "enqueue a prerequisite before its dependents" in str(refused.value)
    assert db_rows.counts() == before


def test_sql_callers_get_the_unknown_prerequisite_refused_too(db_rows):
    before = db_rows.counts()

    jobs = '[{"name": "x", "payload": {}, "depends_on": [987654321]}]'
    with (
        pytest.raises(IntegrityError, match="depends_on names job 987654321") as refused,
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        store.enqueue_many(cursor, jobs)

    assert refused.value.__cause__.sqlstate == "23503"  # foreign_key_violation, as documented
    assert db_rows.counts() == before


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"depends_on": "12"}, "depends_on must be a list of job handles or job ids"),
        ({"depends_on": [True]}, "True is neither a job handle nor a job id"),
        ({"depends_on": [0]}, "0 is neither a job handle nor a job id"),
        ({"depends_on": [1.5]}, "1.5 is neither a job handle nor a job id"),
        (
            {"depends_on": 12},
            r"got int; for one prerequisite pass a list of one, depends_on=\[job\]",
        ),
        ({"depends_on": range(1, 100_002)}, "depends_on names 100,001 jobs; at most 100,000"),
        ({"dependency_policy": "most"}, "dependency_policy must be one of all_succeeded"),
    ],
)
def test_bad_dependency_options_are_refused_before_any_sql(options, message):
    with pytest.raises(InvalidJobOptionError, match=message):
        add.options(**options)


def test_cancel_of_a_blocked_job_settles_its_dependents_by_their_policy():
    blocker = ActiveJobFactory()
    blocked = BlockedJobFactory(depends_on=[blocker.id])
    strict = BlockedJobFactory(depends_on=[blocked.id])
    lenient = BlockedJobFactory(depends_on=[blocked.id], dependency_policy="all_finished")

    assert Admin().cancel(blocked.id).changed

    assert (state(strict.id), state(lenient.id)) == ("canceled", "ready")
    assert Admin().get_job(strict.id).error["prerequisite_state"] == "canceled"


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])
def test_a_prerequisite_failed_by_stall_recovery_settles_its_dependents():
    stalled = add.options(queue="deps-stall", max_stalled=0).enqueue(a=1, b=2)
    dependent = add.options(depends_on=[stalled]).enqueue(a=1, b=2)
    with connection.cursor() as cursor:
        store.claim_many(cursor, "w", ["deps-stall"], [1], 0)
        (recovered,) = store.recover_stalled(cursor)
    assert (recovered.job_id, recovered.failed) == (stalled.id, True)

    assert state(dependent.id) == "canceled"


def test_a_retried_prerequisite_is_waited_for_again():
    first, second = ActiveJobFactory(), ActiveJobFactory()
    dependent = BlockedJobFactory(
        depends_on=[first.id, second.id], dependency_policy="all_finished"
    )
    fail(first)

    assert Admin().retry(first.id).changed
    succeed(second)

    assert (state(dependent.id), Admin().get_job(dependent.id).pending_dependencies) == (
        "blocked",
        1,
    )


def test_a_handler_reads_its_prerequisites_results_through_its_context():
    first = SucceededJobFactory(result={"sum": 3})
    second = SucceededJobFactory(result={"sum": 7})
    handle = add.options(depends_on=[second.handle, first.handle]).enqueue(a=1, b=2)
    token = set_current(JobContext(handle.id, handle.name, handle.queue, 1, 3))
    try:
        prerequisites = current_job().prerequisites()
    finally:
        reset_current(token)

    assert [(p.id, p.state, p.result) for p in prerequisites] == [
        (first.id, "succeeded", {"sum": 3}),
        (second.id, "succeeded", {"sum": 7}),
    ]


def test_a_handler_reads_its_prerequisites_in_two_queries(django_assert_num_queries):
    prerequisites = [SucceededJobFactory(), SucceededJobFactory(), SucceededJobFactory()]
    handle = add.options(depends_on=[p.handle for p in prerequisites]).enqueue(a=1, b=2)
    context = JobContext(handle.id, handle.name, handle.queue, 1, 3)

    with django_assert_num_queries(2):
        assert len(context.prerequisites()) == 3


@workhorse.job(queue="deps-async", name="tests.dependencies.async_reader")
async def async_reader() -> list:
    return [p.result for p in await current_job().aprerequisites()]


def test_an_async_handler_reads_its_prerequisites_results_with_aprerequisites():
    first = SucceededJobFactory(result={"sum": 3})
    handle = async_reader.options(depends_on=[first.handle]).enqueue()

    run_jobs(names=[async_reader], raise_errors=True)

    assert handle.refresh().result == [{"sum": 3}]


def test_a_job_without_prerequisites_has_none_in_its_context():
    job = ReadyJobFactory()

    assert JobContext(job.id, "", "", 1, 3).prerequisites() == []


def test_run_jobs_runs_a_dependent_after_its_prerequisite():
    first = add.options(queue="deps-run").enqueue(a=1, b=2)
    second = add.options(queue="deps-run", depends_on=[first]).enqueue(a=3, b=4)

    run_jobs(names=[add])

    assert [Admin().get_job(h.id).result for h in (first, second)] == [3, 7]


def test_retention_deletes_a_pruned_dependents_edges(cursor):
    first = SucceededJobFactory()
    dependent = SucceededJobFactory(depends_on=[first.id])
    cursor.execute("SELECT count(*) FROM workhorse_job_dependency")
    assert cursor.fetchone()[0] == 1
    # Finished a day ago: a cut-off is never after now (docs/retention.md).
    cursor.execute("UPDATE workhorse_job_outcome SET finished_at = now() - interval '1 day'")
    now = store.database_now(cursor)

    while store.prune_step(cursor, now, now, 1000, False):
        pass  # a step that drops partitions stops before it deletes jobs

    cursor.execute("SELECT count(*) FROM workhorse_job_dependency")
    assert cursor.fetchone()[0] == 0
    assert Admin().get_job(dependent.id) is None


def test_a_retried_dependent_waits_again_for_its_prerequisites_still_live():
    first, second = ActiveJobFactory(), SucceededJobFactory()
    dependent = BlockedJobFactory(depends_on=[first.id, second.id])
    assert Admin().cancel(dependent.id).changed  # canceled while it was blocked

    result = Admin().retry(dependent.id)

    assert (result.status, result.state) == ("changed", "blocked")
    snapshot = Admin().get_job(dependent.id)
    assert (snapshot.state, snapshot.pending_dependencies) == ("blocked", 1)
    succeed(first)
    assert state(dependent.id) == "ready"


def test_a_retried_dependent_whose_policy_cannot_be_met_waits_for_its_retried_prerequisite():
    first = ActiveJobFactory()
    dependent = BlockedJobFactory(depends_on=[first.id])
    fail(first)
    assert state(dependent.id) == "canceled"  # all_succeeded: the failure canceled it

    refused = Admin().retry(dependent.id)

    assert (refused.status, refused.state) == ("unchanged", "canceled")
    assert f"prerequisite job #{first.id} ended failed" in refused.message
    assert f"retry job #{first.id} first" in refused.message
    assert state(dependent.id) == "canceled"
    assert Admin().retry(first.id).changed
    assert (Admin().retry(dependent.id).state, state(dependent.id)) == ("blocked", "blocked")
    with connection.cursor() as cursor:
        (claimed,) = store.claim_many(cursor, "w2", [first.queue], [1], 30)
        assert store.succeed_many(cursor, "w2", [first.id], [claimed.fence], ["1"]) == [
            (first.id, True)
        ]
    assert state(dependent.id) == "ready"


def test_a_retry_can_override_the_dependency_policy():
    first = ActiveJobFactory()
    dependent = BlockedJobFactory(depends_on=[first.id])
    fail(first)

    result = Admin().retry(dependent.id, ignore_dependencies=True)

    assert (result.status, result.state, state(dependent.id)) == ("changed", "ready", "ready")


@pytest.mark.parametrize(
    ("policy", "ends", "expected"),
    [
        ("all_finished", ["failed", "succeeded"], "ready"),
        ("any_succeeded", ["failed", "succeeded"], "ready"),
        ("any_succeeded", ["failed", "live"], "blocked"),
        ("any_succeeded", ["failed", "failed"], "unchanged"),
        ("all_succeeded", ["succeeded", "succeeded"], "ready"),
    ],
)
def test_a_retried_dependent_is_judged_by_its_policy(policy, ends, expected):
    prerequisites = [ActiveJobFactory() for _ in ends]
    dependent = BlockedJobFactory(
        depends_on=[p.id for p in prerequisites], dependency_policy=policy
    )
    Admin().cancel(dependent.id)
    for job, end in zip(prerequisites, ends, strict=True):
        if end == "failed":
            fail(job)
        elif end == "succeeded":
            succeed(job)

    result = Admin().retry(dependent.id)

    assert (result.state if result.changed else result.status) == expected


def forget(cursor, job_id: int) -> None:
    """Retention deletes the finished job ``job_id`` (and no other)."""
    cursor.execute(
        "UPDATE workhorse_job_outcome SET finished_at = now() - interval '30 days'"
        " WHERE job_id = %s",
        [job_id],
    )
    month_ago = store.database_now(cursor) - timedelta(days=29)
    store.prune_step(cursor, month_ago, month_ago, 1000, False)
    assert Admin().get_job(job_id) is None


def test_a_dependency_on_a_job_deleted_by_retention_is_refused_as_unknown(cursor, db_rows):
    gone = SucceededJobFactory()
    forget(cursor, gone.id)
    before = db_rows.counts()

    with pytest.raises(UnknownDependencyError, match=f"depends on job #{gone.id}, which does not"):
        add.options(depends_on=[gone.id]).enqueue(a=1, b=2)

    assert db_rows.counts() == before


def test_a_retried_dependent_does_not_hold_a_prerequisite_deleted_by_retention_against_it(cursor):
    failed, live = ActiveJobFactory(), ActiveJobFactory()
    dependent = BlockedJobFactory(depends_on=[failed.id, live.id])
    fail(failed)
    assert state(dependent.id) == "canceled"  # all_succeeded: the failure canceled it
    forget(cursor, failed.id)

    result = Admin().retry(dependent.id)

    assert (result.status, result.state) == ("changed", "blocked")
    assert Admin().get_job(dependent.id).pending_dependencies == 1
    succeed(live)
    assert state(dependent.id) == "ready"


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])
def test_a_released_job_queues_behind_the_jobs_that_were_ready_before_its_release():
    prerequisite = ActiveJobFactory()
    dependent = BlockedJobFactory(queue="deps-line", depends_on=[prerequisite.id])
    waiting = ReadyJobFactory(queue="deps-line")  # ready after the dependent was enqueued
    succeed(prerequisite)  # committed: a later now() than the waiting job's enqueue

    with connection.cursor() as cursor:
        order = [c.job_id for c in store.claim_many(cursor, "w", ["deps-line"], [1], 30)]
        order += [c.job_id for c in store.claim_many(cursor, "w", ["deps-line"], [1], 30)]

    assert order == [waiting.id, dependent.id]


def test_a_dependency_policy_without_prerequisites_has_no_effect_on_the_enqueue():
    handle = add.options(dependency_policy="all_finished").enqueue(a=1, b=2)

    job = Admin().get_job(handle.id)
    assert (job.state, job.dependency_policy, job.prerequisites) == ("ready", None, ())


def test_a_dependency_policy_set_first_applies_once_prerequisites_are_added():
    first = ActiveJobFactory()
    bound = add.options(dependency_policy="all_finished")

    handle = bound.options(depends_on=[first.id]).enqueue(a=1, b=2)
    fail(first)

    job = Admin().get_job(handle.id)
    assert (job.state, job.dependency_policy) == ("ready", "all_finished")
