"""Fenced ownership: once a job was recovered and claimed again, the writes of
its previous run carry a stale (worker, fence) and are refused: reported as a
lost lease, never applied."""

import json

import pytest

from django_workhorse.db import store
from tests.factories import ActiveJobFactory, SucceededJobFactory

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])

ERROR = json.dumps({"type": "RuntimeError", "message": "late"})


def stale_succeed(cursor, worker, job_id, fence):
    return store.succeed_many(cursor, worker, [job_id], [fence], ['"late result"'])[0][1]


def stale_succeed_with_a_claim(cursor, worker, job_id, fence):
    succeeded, _ = store.succeed_and_claim(
        cursor, worker, [job_id], [fence], ['"late result"'], ["stale-fence-empty"], [1], 30
    )
    return succeeded[0][1]


def stale_fail(cursor, worker, job_id, fence):
    return store.fail_many(cursor, worker, [job_id], [fence], [ERROR], ["failed"], [True], [0])[
        0
    ].ok


def stale_fail_terminally(cursor, worker, job_id, fence):
    return store.fail_many(cursor, worker, [job_id], [fence], [ERROR], ["failed"], [False], [0])[
        0
    ].ok


def stale_heartbeat(cursor, worker, job_id, fence):
    return store.heartbeat_many(cursor, worker, [job_id], [fence], 300)[0][1]


def stale_release(cursor, worker, job_id, fence):
    return store.release_many(cursor, worker, [job_id], [fence])[0][1]


def stale_checkpoint(cursor, worker, job_id, fence):
    return store.write_checkpoint(cursor, job_id, worker, fence, "stage", '"late"')[0]


def stale_sleep(cursor, worker, job_id, fence):
    return store.sleep_many(cursor, worker, [job_id], [fence], ["nap"], [None], [0])[0][1]


STALE_WRITES = [
    pytest.param(stale_succeed, id="succeed"),
    pytest.param(stale_succeed_with_a_claim, id="succeed-and-claim"),
    pytest.param(stale_fail, id="fail-retryable"),
    pytest.param(stale_fail_terminally, id="fail-terminal"),
    pytest.param(stale_heartbeat, id="heartbeat"),
    pytest.param(stale_release, id="release"),
    pytest.param(stale_checkpoint, id="checkpoint"),
    pytest.param(stale_sleep, id="sleep"),
]


@pytest.fixture
def taken_over(cursor, wait_until):
    """A job claimed by worker A, recovered after A's lease ran out, then claimed by B."""
    job = ActiveJobFactory(worker="worker-a", lease_seconds=0.05)
    recovered = wait_until(lambda: store.recover_stalled(cursor))
    assert [r.job_id for r in recovered] == [job.id]
    (claim_b,) = store.claim_many(cursor, "worker-b", [job.queue], [1], 30)
    assert claim_b.job_id == job.id
    assert claim_b.fence > job.fence
    return job, claim_b


@pytest.mark.parametrize("write", STALE_WRITES)
def test_the_previous_owner_cannot_write_after_a_takeover(write, taken_over, cursor, db_rows):
    job, _ = taken_over
    before = db_rows.of_job(job.id)

    assert write(cursor, "worker-a", job.id, job.fence) is False

    assert db_rows.of_job(job.id) == before


@pytest.mark.parametrize("write", STALE_WRITES)
def test_the_current_fence_under_another_worker_id_is_refused(write, taken_over, cursor, db_rows):
    job, claim_b = taken_over
    before = db_rows.of_job(job.id)

    assert write(cursor, "worker-a", job.id, claim_b.fence) is False

    assert db_rows.of_job(job.id) == before


@pytest.mark.parametrize("write", STALE_WRITES)
def test_the_current_worker_with_an_old_fence_is_refused(write, taken_over, cursor, db_rows):
    job, _ = taken_over
    before = db_rows.of_job(job.id)

    assert write(cursor, "worker-b", job.id, job.fence) is False

    assert db_rows.of_job(job.id) == before


@pytest.mark.parametrize("write", STALE_WRITES)
def test_a_finished_job_refuses_every_write(write, cursor, db_rows):
    job = SucceededJobFactory()
    before = db_rows.of_job(job.id)

    assert write(cursor, job.worker, job.id, job.fence) is False

    assert db_rows.of_job(job.id) == before


def test_the_new_owner_can_still_finish_the_job(taken_over, cursor, db_rows):
    job, claim_b = taken_over
    assert stale_succeed(cursor, "worker-a", job.id, job.fence) is False

    assert store.succeed_many(cursor, "worker-b", [job.id], [claim_b.fence], ['"done"']) == [
        (job.id, True)
    ]
    assert db_rows.outcome(job.id)["state"] == "succeeded"


def test_a_batch_reports_each_lost_lease_and_applies_the_rest(taken_over, cursor, db_rows):
    job, _ = taken_over
    other = ActiveJobFactory(worker="worker-a")

    results = store.succeed_many(
        cursor, "worker-a", [job.id, other.id], [job.fence, other.fence], ['"x"', '"y"']
    )

    assert results == [(job.id, False), (other.id, True)]
    assert db_rows.runtime(job.id)["worker_id"] == "worker-b"
    assert db_rows.outcome(other.id)["state"] == "succeeded"
