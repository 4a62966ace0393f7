"""``django_workhorse.testing`` on its own: limits, filters, savepoints, and
the real rows it leaves."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from jobtests.tasks import add

import django_workhorse as workhorse
from django_workhorse.exceptions import UnknownJobError
from django_workhorse.models import Job
from django_workhorse.testing import (
    TooManyRuns,
    WorkhorseJobs,
    assert_enqueued,
    assert_not_enqueued,
    enqueued_jobs,
    run_jobs,
)
from tests.helpers import run_pytest

pytestmark = pytest.mark.django_db


@workhorse.job(queue="tests.helpers.loop", name="tests.helpers.forever")
def forever(n: int) -> None:
    forever.enqueue(n=n + 1)


@workhorse.job(queue="tests.helpers.sql", name="tests.helpers.bad_sql", max_attempts=1)
def bad_sql() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 / 0")


@workhorse.job(queue="tests.helpers.writes", name="tests.helpers.writes_then_fails", max_attempts=1)
def writes_then_fails() -> None:
    from django.utils import timezone
    from jobtests.models import RunRecord

    ctx = workhorse.current_job()
    RunRecord.objects.create(
        job_id=ctx.job_id, attempt=ctx.attempt, pid=0, worker_id="", started_at=timezone.now()
    )
    raise ValueError("after the write")


@workhorse.job(queue="tests.helpers.gives_up", name="tests.helpers.gives_up")
def gives_up() -> None:
    raise workhorse.JobCanceledError("nothing left to do")


@workhorse.job(queue="tests.helpers.other", name="tests.helpers.other")
def other() -> str:
    return "other"


@workhorse.job(queue="tests.helpers.dated", name="tests.helpers.returns_a_set", max_attempts=3)
def returns_a_set() -> set:
    return {1, 2}


@workhorse.job(queue="tests.helpers.flaky", name="tests.helpers.always_fails", max_attempts=2)
def always_fails(n: int) -> None:
    raise ValueError(f"failure {n}")


def test_a_job_that_enqueues_itself_forever_stops_at_the_limit():
    forever.enqueue(n=0)
    with pytest.raises(TooManyRuns, match="ran 5 jobs"):
        run_jobs(queues=["tests.helpers.loop"], limit=5)
    # the job left over went back to ready, not stuck active
    states = {h.refresh().status for h in enqueued_jobs(forever)}
    assert states == {"succeeded", "ready"}


def test_a_handlers_database_error_leaves_the_tests_transaction_usable():
    handle = bad_sql.enqueue()
    report = run_jobs(queues=["tests.helpers.sql"])
    assert [r.ok for r in report] == [False]
    assert "division by zero" in str(report.runs[0].error)
    assert handle.refresh().status == "failed"  # the test's transaction still works


def test_queues_narrow_what_runs():
    ran = other.enqueue()
    waits = bad_sql.enqueue()
    assert run_jobs(queues=["tests.helpers.other"]).names() == ["tests.helpers.other"]
    assert ran.refresh().status == "succeeded"
    assert waits.refresh().status == "ready"


def test_runs_are_recorded_as_a_worker_records_them(db_rows):
    handle = other.enqueue()
    run_jobs(names=[other])
    attempts = db_rows.of_job(handle.id)["attempts"]
    assert [(a["attempt"], a["outcome"]) for a in attempts] == [(1, "succeeded")]
    assert attempts[0]["worker_id"].startswith("testing:")


def test_a_handler_raising_job_cancelled_ends_its_job_canceled_not_failed(db_rows):
    handle = gives_up.enqueue()
    report = run_jobs(names=[gives_up])
    assert [(r.ok, r.will_retry) for r in report] == [(False, False)]
    assert handle.refresh().status == "canceled"
    attempts = db_rows.of_job(handle.id)["attempts"]
    assert [(a["attempt"], a["outcome"]) for a in attempts] == [(1, "canceled")]


def test_a_return_value_that_is_not_json_fails_the_job_without_retry_as_a_worker_does():
    handle = returns_a_set.enqueue()
    report = run_jobs(names=[returns_a_set])
    assert [(r.ok, r.will_retry) for r in report] == [(False, False)]
    assert "is a set, which is not JSON" in str(report.runs[0].error)
    assert (handle.refresh().status, handle.attempts) == ("failed", 1)


@workhorse.job(queue="tests.helpers.defaulted", name="tests.helpers.defaulted", max_attempts=3)
def defaulted(n: int = 0) -> int:
    return n


def enqueue_sql(payload_json: str) -> int:
    """A job of ``defaulted`` written as psql would, with any jsonb payload."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT job_id FROM workhorse_enqueue_v1('tests.helpers.defaulted',"
            " 'tests.helpers.defaulted', %s::jsonb)",
            [payload_json],
        )
        return cursor.fetchone()[0]


def test_a_payload_python_cannot_read_fails_without_retry_as_a_worker_does():
    job_id = enqueue_sql('{"n": ' + "9" * 5000 + "}")

    report = run_jobs(names=[defaulted])

    assert [(r.ok, r.will_retry) for r in report] == [(False, False)]
    assert isinstance(report.runs[0].error, workhorse.InvalidPayloadError)
    assert f"the stored payload of job #{job_id} cannot be read" in str(report.runs[0].error)
    job = workhorse.Admin().get_job(job_id)
    assert (job.state, job.current_attempt) == ("failed", 1)


def test_a_payload_that_no_longer_fits_the_handler_fails_without_retry_as_a_worker_does():
    job_id = enqueue_sql('{"m": 1}')

    report = run_jobs(names=[defaulted])

    assert [(r.ok, r.will_retry) for r in report] == [(False, False)]
    assert isinstance(report.runs[0].error, workhorse.InvalidPayloadError)
    job = workhorse.Admin().get_job(job_id)
    assert (job.state, job.current_attempt) == ("failed", 1)


def test_assert_enqueued_compares_each_argument_for_equality():
    handle = other.options(queue="tests.helpers.other").enqueue()
    result = add.enqueue(1, 2)
    assert str(assert_enqueued(add, args=[1, 2]).id) == result.id
    assert str(assert_enqueued(add, args=(1, 2), kwargs={}).id) == result.id
    assert str(assert_enqueued(add).id) == result.id  # arguments not named are not checked
    for wrong in ([2, 1], [2], [1, 2, 3]):
        with pytest.raises(AssertionError, match=r"no jobtests.tasks.add job was enqueued"):
            assert_enqueued(add, args=wrong)
        assert_not_enqueued(add, args=wrong)
    with pytest.raises(AssertionError, match=r"1 jobtests.tasks.add job"):
        assert_not_enqueued(add, args=[1, 2])
    with pytest.raises(AssertionError):
        assert_enqueued(add, kwargs={"b": 2})  # a dict whole: the task had no kwargs
    with pytest.raises(AssertionError):
        assert_enqueued(other, missing=None)  # a named argument must be in the payload
    assert assert_enqueued(other).id == handle.id


LEFTOVERS = """\
import pytest
from django_workhorse.exceptions import UnknownJobError
from django_workhorse.models import Job

import django_workhorse as workhorse


@workhorse.job(queue="leftovers", name="leftovers.noop")
def noop() -> None:
    pass


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])
def test_a_transactional_test_by_its_marker(workhorse_jobs):
    noop.enqueue()
    workhorse_jobs.assert_enqueued(noop)


def test_a_transactional_test_by_its_fixture(workhorse_jobs, transactional_db):
    noop.enqueue()
    workhorse_jobs.assert_enqueued(noop)


def test_a_live_server_test_with_a_paused_queue(workhorse_jobs, live_server):
    noop.enqueue()
    workhorse.Admin().pause_queue("leftovers")
    workhorse_jobs.assert_enqueued(noop)


# Transactional too: pytest-django runs the plain db tests first.
@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])
def test_the_next_test_finds_no_job_and_no_queue_setting_left():
    from django.db import connection

    assert list(Job.objects.values_list("name", flat=True)) == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM workhorse_queue")
        assert cursor.fetchall() == []
"""


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])
def test_the_fixture_deletes_the_jobs_and_queue_settings_a_transactional_test_left(tmp_path):
    plugin = 'pytest_plugins = ["django_workhorse.testing"]\n'
    run = run_pytest(tmp_path, {"conftest.py": plugin, "test_left.py": LEFTOVERS})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "4 passed" in run.stdout
    assert not Job.objects.exists()


def test_run_jobs_serves_every_queue_that_holds_a_job():
    moved = other.options(queue="tests.helpers.elsewhere").enqueue()
    assert run_jobs().names() == ["tests.helpers.other"]
    assert moved.refresh().status == "succeeded"


def test_names_run_a_task_on_whatever_queue_it_was_enqueued_on():
    result = add.using(queue_name="shop").enqueue(2, 3)
    waits = other.options(queue="shop").enqueue()
    assert run_jobs(names=[add]).names() == ["jobtests.tasks.add"]
    assert add.get_result(result.id).return_value == 5
    assert waits.refresh().status == "ready"  # another name: handed back untouched


def test_names_no_job_answers_to_are_refused():
    with pytest.raises(UnknownJobError, match=r"tests\.helpers\.nothing"):
        run_jobs(names=["tests.helpers.nothing"])


def test_assert_enqueued_lists_what_was_enqueued_instead():
    add.enqueue(1, 2)
    add.enqueue(3, 4)
    with pytest.raises(AssertionError) as raised:
        assert_enqueued(add, args=[5, 6])
    message = str(raised.value)
    assert "no jobtests.tasks.add job was enqueued with {'args': [5, 6]}" in message
    assert "[1, 2]" in message and "[3, 4]" in message


def test_assert_enqueued_says_when_no_job_of_the_kind_was_enqueued():
    with pytest.raises(AssertionError, match=r"no tests\.helpers\.other job was enqueued$"):
        assert_enqueued(other)


def test_enqueued_jobs_gives_every_match_oldest_first_and_assert_enqueued_the_newest():
    first = other.enqueue()
    second = other.enqueue()
    assert [h.id for h in enqueued_jobs(other)] == [first.id, second.id]
    assert assert_enqueued(other).id == second.id


def test_a_failing_handlers_writes_are_undone_in_a_db_test():
    from jobtests.models import RunRecord

    handle = writes_then_fails.enqueue()

    report = run_jobs(names=[writes_then_fails])

    assert [str(r.error) for r in report.failed] == ["after the write"]
    assert not RunRecord.objects.filter(job_id=handle.id).exists()
    assert handle.refresh().status == "failed"


def test_a_failing_handler_is_retried_at_once_up_to_max_attempts_then_failed():
    handle = always_fails.enqueue(n=1)

    report = run_jobs()

    runs = [(r.attempt, r.ok, r.will_retry) for r in report]
    assert runs == [(1, False, True), (2, False, False)]
    assert [r.job_id for r in report.failed] == [handle.id, handle.id]
    assert report.succeeded == []
    assert handle.refresh().status == "failed"
    assert handle.error is not None and handle.error["message"] == "failure 1"


def test_raise_errors_raises_the_handlers_exception_after_recording_the_attempt():
    handle = always_fails.enqueue(n=1)

    with pytest.raises(ValueError, match="failure 1"):
        run_jobs(raise_errors=True)

    assert (handle.refresh().status, handle.attempts) == ("scheduled", 1)  # its retry waits
    assert handle.error is not None and handle.error["message"] == "failure 1"


def test_raise_errors_hands_back_the_jobs_claimed_with_the_failing_one():
    always_fails.enqueue(n=1)
    behind = other.options(queue="tests.helpers.flaky").enqueue()

    with pytest.raises(ValueError):
        run_jobs(raise_errors=True)

    assert (behind.refresh().status, behind.attempts) == ("ready", 0)


def test_skip_waits_runs_a_delayed_job_and_one_whose_run_at_is_ahead_at_once():
    delayed = other.options(delay=timedelta(hours=1)).enqueue()
    dated = other.options(run_at=timezone.now() + timedelta(days=3)).enqueue()

    assert run_jobs().names() == ["tests.helpers.other", "tests.helpers.other"]
    assert (delayed.refresh().status, dated.refresh().status) == ("succeeded", "succeeded")


def test_without_skip_waits_only_what_is_due_now_runs():
    delayed = other.options(delay=timedelta(hours=1)).enqueue()
    due = other.enqueue()

    assert [r.job_id for r in run_jobs(skip_waits=False)] == [due.id]
    assert delayed.refresh().status == "scheduled"


def test_skip_waits_runs_every_job_of_a_rate_limited_queue():
    workhorse.Admin().set_queue_limits("tests.helpers.other", rate=1, period=timedelta(minutes=1))
    handles = [other.enqueue() for _ in range(3)]

    assert run_jobs().names() == ["tests.helpers.other"] * 3
    assert [h.refresh().status for h in handles] == ["succeeded"] * 3


def test_without_skip_waits_a_rate_limited_queue_runs_what_its_rate_allows():
    workhorse.Admin().set_queue_limits("tests.helpers.other", rate=1, period=timedelta(minutes=1))
    first, second = other.enqueue(), other.enqueue()

    assert [r.job_id for r in run_jobs(skip_waits=False)] == [first.id]
    assert second.refresh().status == "ready"


def test_run_jobs_never_runs_a_dependent_its_failed_prerequisite_canceled():
    prerequisite = always_fails.enqueue(n=1)
    dependent = other.options(depends_on=[prerequisite]).enqueue()

    report = run_jobs()

    assert report.names() == ["tests.helpers.always_fails"] * 2
    assert dependent.refresh().status == "canceled"


def test_the_fixtures_helpers_are_the_functions_bound_to_its_database():
    first = other.enqueue()
    second = other.enqueue()
    jobs = WorkhorseJobs()

    assert [h.id for h in jobs.enqueued(other)] == [first.id, second.id]
    assert jobs.assert_enqueued(other).id == second.id
    jobs.assert_not_enqueued(always_fails)
    with pytest.raises(AssertionError, match=r"2 tests\.helpers\.other job"):
        jobs.assert_not_enqueued(other)
    assert jobs.run().names() == ["tests.helpers.other"] * 2
