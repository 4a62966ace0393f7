"""Filter-wide actions as jobs: ``Admin.start_bulk`` records the action and
enqueues its job on ``workhorse.operator``; the job walks the matching jobs
in batches, its position kept with each batch (docs/admin.md, "Retry all
and cancel all")."""

from __future__ import annotations

import pytest
from django.db import connection

from django_workhorse import Admin, InvalidQueryError
from django_workhorse.operations import bulk_actions
from django_workhorse.testing import run_jobs
from tests.factories import ReadyJobFactory, many_failed_jobs
from tests.helpers import timeline_events

pytestmark = pytest.mark.django_db

OPERATOR = [bulk_actions.OPERATOR_QUEUE]


def retried_counts(job_ids: list[int]) -> dict[int, int]:
    """How many 'retried' events each job has."""
    with connection.cursor() as cursor:
        events = timeline_events(cursor, job_ids, "retried")
    counts = dict.fromkeys(job_ids, 0)
    for job_id, *_ in events:
        counts[job_id] += 1
    return counts


def test_asking_returns_a_queued_action_and_its_job_retries_every_match():
    failed = many_failed_jobs(25, queue="mail")
    admin = Admin()

    action = admin.start_bulk(
        "retry", queue="mail", state="failed", by="ops", permission="test", batch_size=10
    )

    assert (action.status, action.matched, action.requested_by) == ("queued", 0, "ops")
    assert action.permission == "test" and action.bound_id == max(failed)
    run_jobs(queues=OPERATOR)
    done = admin.bulk_action(action.id)
    assert done is not None and done.status == "finished"
    assert (done.total, done.matched, done.changed, done.skipped) == (25, 25, 25, 0)
    assert done.batches == 3
    assert set(retried_counts(failed).values()) == {1}


def test_the_same_action_on_the_same_filter_while_running_is_the_same_action():
    many_failed_jobs(3, queue="mail")
    admin = Admin()

    first = admin.start_bulk("retry", queue="mail")
    second = admin.start_bulk("retry", queue="mail", reason="again")

    assert second.id == first.id and not second.inserted and first.inserted
    report = run_jobs(queues=OPERATOR)
    assert len(report.succeeded) == 1
    third = admin.start_bulk("retry", queue="mail")
    assert third.id != first.id and third.inserted


def test_a_job_enqueued_after_the_action_was_asked_for_is_not_touched():
    admin = Admin()
    before = ReadyJobFactory(queue="later")
    action = admin.start_bulk("cancel", queue="later")
    after = ReadyJobFactory(queue="later")

    run_jobs(queues=OPERATOR)

    assert admin.get_job(before.id).state == "canceled"
    assert admin.get_job(after.id).state == "ready"
    assert admin.bulk_action(action.id).changed == 1


def test_a_batch_that_committed_before_its_checkpoint_is_not_acted_on_again():
    """A run killed after a batch committed and before its step was recorded:
    the recovering run goes on below the committed position."""
    failed = many_failed_jobs(12, queue="mail")
    admin = Admin()
    action = admin.start_bulk("retry", queue="mail", batch_size=5)
    bulk_actions.step("default", action.id, None)  # started, as a lost run did
    bulk_actions.step("default", action.id, None)  # and one batch, unrecorded

    run_jobs(queues=OPERATOR)

    done = admin.bulk_action(action.id)
    assert (done.status, done.matched, done.changed) == ("finished", 12, 12)
    assert set(retried_counts(failed).values()) == {1}


def test_a_canceled_action_stops_and_keeps_what_it_did():
    many_failed_jobs(10, queue="mail")
    admin = Admin()
    action = admin.start_bulk("retry", queue="mail", batch_size=4)
    bulk_actions.step("default", action.id, None)
    bulk_actions.step("default", action.id, None)

    result = admin.cancel_bulk_action(action.id, by="ops")
    run_jobs(queues=OPERATOR)

    assert result.status == "requested"
    done = admin.bulk_action(action.id)
    assert (done.status, done.matched, done.canceled_by) == ("canceled", 4, "ops")
    assert admin.count_jobs(queue="mail", state="failed") == 6


def test_a_queued_action_canceled_ends_at_once():
    many_failed_jobs(2, queue="mail")
    admin = Admin()
    action = admin.start_bulk("retry", queue="mail")

    result = admin.cancel_bulk_action(action.id)

    assert (result.status, admin.bulk_action(action.id).status) == ("changed", "canceled")
    run_jobs(queues=OPERATOR)
    assert admin.count_jobs(queue="mail", state="failed") == 2


def test_a_cancel_all_over_every_queue_does_not_cancel_the_actions_own_jobs():
    ReadyJobFactory(queue="somewhere")
    admin = Admin()
    first = admin.start_bulk("cancel", state="ready")
    admin.start_bulk("cancel", queue="somewhere")  # a second action's job, ready too

    run_jobs(queues=OPERATOR)

    assert admin.bulk_action(first.id).changed == 1
    assert [a.status for a in admin.bulk_actions()] == ["finished", "finished"]


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"action": "retry", "state": "ready"}, "nothing to retry"),
        ({"action": "cancel", "state": "failed"}, "nothing to cancel"),
        ({"action": "delete"}, "bulk action must be"),
        ({"action": "retry", "queue": "workhorse.operator"}, "holds the jobs that run"),
        ({"action": "retry", "batch_size": 0}, "batch_size"),
    ],
)
def test_an_action_that_cannot_apply_is_refused_before_anything_is_written(kwargs, words):
    with pytest.raises(InvalidQueryError, match=words):
        Admin().start_bulk(**kwargs)

    assert Admin().bulk_actions() == []
