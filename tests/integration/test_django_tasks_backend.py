"""The Django Tasks backend without a worker: results by id, the status table,
enqueue options, system checks, and what the backend imports."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest
from django.core.checks import run_checks
from django.db import connection, transaction
from django.test import override_settings
from jobtests.tasks import (
    add,
    always_fails,
    async_add,
    checkpoints_a_date,
    fails_once,
    gives_up,
    in_order,
    loses_its_lease,
    naps,
    retries_in_an_hour,
    returns_a_date,
    returns_int_keys,
)

from django_workhorse import Admin, enqueue
from django_workhorse.context import LeaseLost
from django_workhorse.core.conf import RetentionSettings
from django_workhorse.db import store
from django_workhorse.exceptions import StalledJobError
from django_workhorse.models import Job
from django_workhorse.operations.retention import prune
from django_workhorse.tasks import WorkhorseBackend
from django_workhorse.tasks.compat import (
    InvalidTask,
    TaskResultDoesNotExist,
    TaskResultStatus,
    default_task_backend,
    task_backends,
    task_enqueued,
    task_finished,
    task_started,
)
from django_workhorse.tasks.results import STATUS_OF_STATE
from django_workhorse.testing import run_jobs
from tests import helpers

try:
    from django.tasks import task
    from django.tasks.exceptions import TaskResultMismatch
except ImportError:  # Django 5.2: the backport
    from django_tasks import task
    from django_tasks.exceptions import TaskResultMismatch

pytestmark = pytest.mark.django_db

BACKEND = "django_workhorse.tasks.WorkhorseBackend"


def test_the_backend_says_what_it_supports():
    backend = task_backends["default"]
    assert isinstance(backend, WorkhorseBackend)
    assert backend.supports_defer and backend.supports_async_task
    assert backend.supports_get_result and backend.supports_priority


@pytest.mark.parametrize("result_id", ["not-an-id", "", "0", "-1", "1.5", "99999999999999999999"])
def test_get_result_of_a_malformed_id_raises_does_not_exist(result_id):
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(result_id)


def test_get_result_of_an_id_with_a_trailing_newline_raises_does_not_exist():
    result = add.enqueue(1, b=2)
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(f"{result.id}\n")


def test_get_result_of_an_unknown_id_raises_does_not_exist():
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result("987654321")


def test_get_result_of_a_native_job_raises_does_not_exist():
    handle = enqueue("jobtests.jobs.record", label="native")
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(str(handle.id))


def test_aget_result_of_an_unknown_id_raises_does_not_exist():
    from asgiref.sync import async_to_sync

    with pytest.raises(TaskResultDoesNotExist):
        async_to_sync(default_task_backend.aget_result)("123456789")


def test_enqueue_returns_a_ready_result_that_get_result_finds():
    result = add.enqueue(1, b=2)
    assert result.status == TaskResultStatus.READY
    found = add.get_result(result.id)
    assert (found.id, found.status, found.args, found.kwargs) == (result.id, "READY", [1], {"b": 2})
    assert found.worker_ids == [] and found.attempts == 0 and found.errors == []
    assert found.task.func is add.func
    snapshot = Admin().get_job(int(result.id))
    assert (snapshot.name, snapshot.queue) == ("jobtests.tasks.add", "jobtests.tasks")


def test_priority_run_after_and_workhorse_options_reach_the_job():
    from django.utils import timezone

    later = timezone.now() + timedelta(hours=1)
    result = in_order.using(
        priority=7, run_after=later, max_attempts=9, timeout=30, idempotency_key="once"
    ).enqueue("x")
    snapshot = Admin().get_job(int(result.id))
    assert (snapshot.state, snapshot.priority, snapshot.max_attempts) == ("scheduled", 7, 9)
    assert snapshot.run_at == later
    again = in_order.using(idempotency_key="once").enqueue("y")
    assert again.id == result.id


def test_the_decorator_and_options_give_defaults():
    assert Admin().get_job(int(always_fails.enqueue("m").id)).max_attempts == 2
    assert Admin().get_job(int(add.enqueue(1, 2).id)).max_attempts == 3  # OPTIONS


def test_arguments_that_are_not_json_are_refused():
    with pytest.raises(TypeError):
        add.enqueue(object(), 1)


def test_arguments_that_do_not_come_back_equal_from_json_are_refused_naming_the_part(db_rows):
    before = db_rows.counts()

    with pytest.raises(InvalidTask, match=r"payload\['kwargs'\]\['b'\]\['x'\] has the key 2"):
        add.enqueue(1, b={"x": {2: 3}})

    assert db_rows.counts() == before


def test_a_queue_the_backend_does_not_list_is_refused():
    with pytest.raises(InvalidTask, match="not valid for backend"):
        add.using(queue_name="elsewhere")


def test_every_state_maps_onto_a_task_status():
    assert STATUS_OF_STATE == {
        "blocked": "READY",
        "scheduled": "READY",
        "ready": "READY",
        "active": "RUNNING",
        "succeeded": "SUCCESSFUL",
        "failed": "FAILED",
        "canceled": "FAILED",
    }


def errors_for(tasks: dict) -> list[str]:
    with override_settings(TASKS=tasks):
        return [f"{m.id}: {m.msg}" for m in run_checks() if m.id.startswith("workhorse.E1")]


def test_checks_report_bad_options_and_queue_names():
    messages = errors_for(
        {
            "default": {
                "BACKEND": BACKEND,
                "QUEUES": ["ok", "bad queue!"],
                "OPTIONS": {
                    "MAX_ATTEMPTS": 0,
                    "TIMEOUT": "soon",
                    "DATABASE": "nowhere",
                    "BACKOFF": {"kind": "linear"},
                    "RETRIES": 3,
                },
            }
        }
    )
    assert any("workhorse.E101" in m and "'bad queue!'" in m for m in messages)
    joined = "\n".join(messages)
    for key in ("MAX_ATTEMPTS", "TIMEOUT", "DATABASE", "BACKOFF", "RETRIES"):
        assert f"['OPTIONS']['{key}']" in joined, key


def test_checks_are_quiet_for_good_options():
    assert (
        errors_for(
            {
                "default": {
                    "BACKEND": BACKEND,
                    "QUEUES": ["default"],
                    "OPTIONS": {
                        "MAX_ATTEMPTS": 4,
                        "TIMEOUT": timedelta(seconds=30),
                        "MAX_STALLED": 2,
                        "BACKOFF": {"kind": "exponential", "base": 2, "max": 60},
                        "DATABASE": "default",
                    },
                }
            }
        )
        == []
    )


def test_importing_the_backend_imports_no_models():
    code = (
        "import sys, django.conf; django.conf.settings.configure();"
        "import django_workhorse.tasks;"
        "print(sorted(m for m in sys.modules if m.endswith('.models') and 'workhorse' in m))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_aenqueue_and_aget_result_from_async_code():
    from asgiref.sync import async_to_sync

    async def enqueue_and_read():
        result = await add.aenqueue(3, 4)
        return result, await add.aget_result(result.id)

    result, found = async_to_sync(enqueue_and_read)()
    assert (result.status, found.id, found.args) == ("READY", result.id, [3, 4])


def test_a_task_can_wait_for_another_task_and_for_a_job():
    first = add.enqueue(1, 2)
    job = enqueue("jobtests.jobs.record", label="before the task")

    later = add.using(depends_on=[first, str(job.id)], dependency_policy="all_finished").enqueue(
        3, 4
    )

    snapshot = Admin().get_job(int(later.id))
    assert snapshot.state == "blocked" and later.status == TaskResultStatus.READY
    assert snapshot.dependency_policy == "all_finished"
    assert [p.id for p in snapshot.prerequisites] == sorted([int(first.id), job.id])


@pytest.mark.parametrize("bad", [["not-an-id"], "12", [1.5], [987654321]])
def test_bad_task_dependencies_are_refused_with_invalid_task(bad):
    with pytest.raises(InvalidTask, match=r"depends_on|unknown|987654321"):
        add.using(depends_on=bad).enqueue(1, 2)


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse", "jobtests"])
def test_attempts_still_count_once_retention_dropped_a_live_jobs_history():
    result = retries_in_an_hour.enqueue("no")
    run_jobs(names=[retries_in_an_hour], skip_waits=False)  # attempt 1 fails; retry in an hour
    assert retries_in_an_hour.get_result(result.id).attempts == 1
    with connection.cursor() as cursor:
        # Forty days back, where no day partition exists: the default
        # partition, whose rows past the window retention deletes.
        cursor.execute(
            "UPDATE workhorse_attempt_history SET started_at = started_at - interval '40 days',"
            " finished_at = finished_at - interval '40 days' WHERE job_id = %s",
            [int(result.id)],
        )
        week = RetentionSettings(
            history=7 * 86400, finished_jobs=7 * 86400, interval=None, batch_size=100
        )
        assert prune(cursor, settings=week).deleted_history_rows >= 1
        assert store.get_attempts(cursor, int(result.id)) == []

    found = retries_in_an_hour.get_result(result.id)
    assert (found.status, found.attempts, found.worker_ids) == ("READY", 1, [""])


def test_attempts_made_before_an_operators_retry_still_count():
    result = always_fails.enqueue("boom")
    run_jobs(names=[always_fails])  # two attempts, then FAILED
    assert Admin().retry(int(result.id)).status == "changed"
    result.refresh()
    assert (result.status, result.attempts, len(result.errors)) == ("READY", 2, 2)
    started = []

    def on_started(sender, task_result, **kwargs):
        started.append(task_result.attempts)

    task_started.connect(on_started)
    try:
        run_jobs(names=[always_fails])  # a fresh budget: two more attempts
    finally:
        task_started.disconnect(on_started)
    result.refresh()
    assert started == [3, 4]
    assert (result.status, result.attempts, len(result.errors)) == ("FAILED", 4, 4)
    assert all(result.worker_ids)


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])
def test_a_task_failed_after_its_runs_stalled_has_an_error_class_that_imports(cursor):
    result = add.using(max_stalled=0).enqueue(1, 2)
    store.claim_many(cursor, "crashed", ["jobtests.tasks"], [1], 0)
    (recovered,) = store.recover_stalled(cursor)
    assert recovered.failed

    found = add.get_result(result.id)

    assert found.status == "FAILED"
    assert found.errors[-1].exception_class is StalledJobError
    assert "StalledJobError: the job stalled 1 times" in found.errors[-1].traceback


def test_a_task_raising_job_cancelled_with_attempts_left_finishes_failed():
    # Collected in memory: a failing handler's writes (a receiver's too) are
    # rolled back with run_jobs' savepoint.
    finished: list[str] = []

    def on_finished(sender, task_result, **kwargs):
        finished.append(task_result.status)

    task_finished.connect(on_finished)
    try:
        result = gives_up.enqueue("nothing to do")
        run_jobs(names=[gives_up])
    finally:
        task_finished.disconnect(on_finished)
    assert Admin().get_job(int(result.id)).state == "canceled"
    assert finished == [TaskResultStatus.FAILED]
    assert gives_up.get_result(result.id).status == TaskResultStatus.FAILED


def test_get_result_gives_back_run_after_until_the_task_starts():
    from django.utils import timezone

    later = timezone.now() + timedelta(hours=1)
    result = in_order.using(run_after=later).enqueue("later")
    assert in_order.get_result(result.id).task.run_after == later
    assert in_order.get_result(in_order.enqueue("now").id).task.run_after is None

    run_jobs(names=[in_order])  # skips the wait: both run
    assert in_order.get_result(result.id).task.run_after is None


def stored(result) -> Job:
    """The job row a task result names."""
    return Job.objects.get(id=int(result.id))


def test_decorator_options_reach_the_job():
    job = stored(retries_in_an_hour.enqueue("x"))
    assert (job.max_attempts, job.timeout, job.max_stalled) == (4, timedelta(seconds=45), 3)
    assert job.backoff == {"kind": "fixed", "delay": 3600.0}


def test_per_enqueue_timeout_and_max_stalled_reach_the_job():
    job = stored(in_order.using(timeout=timedelta(seconds=90), max_stalled=5).enqueue("x"))
    assert (job.timeout, job.max_stalled) == (timedelta(seconds=90), 5)
    plain = stored(in_order.enqueue("y"))  # the workhorse defaults
    assert (plain.timeout, plain.max_stalled) == (None, 1)


def tuned(label: str) -> str:
    """Made a task of the "tuned" backend inside the tests below."""
    return label


TUNED = {
    "BACKEND": BACKEND,
    "QUEUES": ["tuned"],
    "OPTIONS": {
        "MAX_ATTEMPTS": 6,
        "TIMEOUT": 12,
        "MAX_STALLED": 4,
        "BACKOFF": {"kind": "exponential", "base": 2, "max": 60, "jitter": 0},
    },
}


def tuned_task(monkeypatch, queue_name="tuned"):
    """``tuned`` as a task of the "tuned" backend, bound to its name in this
    module as @task at module level leaves it: enqueue and get_result import
    it by its path."""
    a_task = task(backend="tuned", queue_name=queue_name)(tuned)
    monkeypatch.setattr(sys.modules[__name__], "tuned", a_task)
    return a_task


def test_backend_options_reach_the_job(settings, monkeypatch):
    with override_settings(TASKS={**settings.TASKS, "tuned": TUNED}):
        task_of_tuned = tuned_task(monkeypatch)
        job = stored(task_of_tuned.enqueue("x"))
        assert (job.max_attempts, job.timeout, job.max_stalled) == (6, timedelta(seconds=12), 4)
        assert job.backoff == {"kind": "exponential", "base": 2.0, "max": 60.0, "jitter": 0.0}
        # The task's own options win over OPTIONS.
        job = stored(task_of_tuned.using(timeout=3, max_stalled=0).enqueue("y"))
        assert (job.timeout, job.max_stalled) == (timedelta(seconds=3), 0)


@pytest.fixture(scope="module", name="side_alias")
def module_side_alias():
    """``tests.helpers.side_alias`` for the module, so that it exists before
    pytest-django checks the test's ``databases``."""
    with helpers.side_alias() as alias:
        yield alias


@pytest.mark.django_db(
    transaction=True, databases=["default", "side"], available_apps=["django_workhorse"]
)
def test_the_database_option_writes_the_job_through_that_alias(settings, side_alias, monkeypatch):
    tuned_here = {**TUNED, "OPTIONS": {"DATABASE": side_alias}}
    with override_settings(TASKS={**settings.TASKS, "tuned": tuned_here}):
        task_of_tuned = tuned_task(monkeypatch)
        with transaction.atomic(using=side_alias):
            result = task_of_tuned.enqueue("x")
            assert Admin(using=side_alias).get_job(int(result.id)).state == "ready"
            assert Admin(using="default").get_job(int(result.id)) is None  # not committed
            assert task_of_tuned.get_result(result.id).id == result.id
        assert Admin(using="default").get_job(int(result.id)).state == "ready"


def test_the_check_says_the_app_must_be_installed(settings):
    from django_workhorse.operations.installed_check import check_installed

    apps = [a for a in settings.INSTALLED_APPS if a != "django_workhorse"]
    with override_settings(INSTALLED_APPS=apps):
        errors = check_installed()
    assert [e.id for e in errors] == ["workhorse.E103"]
    assert "INSTALLED_APPS" in errors[0].msg
    assert check_installed() == []


def test_arefresh_reads_the_result_again_from_async_code():
    from asgiref.sync import async_to_sync

    result = add.enqueue(5, 6)
    run_jobs(names=[add])
    assert result.status == TaskResultStatus.READY  # as read at enqueue
    async_to_sync(result.arefresh)()
    assert (result.status, result.return_value, result.attempts) == ("SUCCESSFUL", 11, 1)


def test_an_empty_queues_list_allows_any_queue(settings, monkeypatch):
    with override_settings(TASKS={**settings.TASKS, "tuned": {**TUNED, "QUEUES": []}}):
        task_of_tuned = tuned_task(monkeypatch, queue_name="any.queue-at-all")
        job = stored(task_of_tuned.enqueue("x"))
    assert job.queue == "any.queue-at-all"


def test_a_backend_without_options_gives_the_workhorse_defaults(settings, monkeypatch):
    plain = {"BACKEND": BACKEND, "QUEUES": ["tuned"]}
    workhorse = {**settings.WORKHORSE, "DEFAULT_MAX_ATTEMPTS": 7, "MAX_STALLED_COUNT": 2}
    with override_settings(TASKS={**settings.TASKS, "tuned": plain}, WORKHORSE=workhorse):
        task_of_tuned = tuned_task(monkeypatch)
        job = stored(task_of_tuned.enqueue("x"))
    assert (job.max_attempts, job.timeout, job.max_stalled) == (7, None, 2)
    assert job.backoff is None  # the default: exponential, 1 s doubling, capped at 1 h


def test_a_task_whose_prerequisite_failed_ends_failed_with_an_error_naming_it():
    first = always_fails.using(max_attempts=1).enqueue("no")
    run_jobs(names=[always_fails])

    later = add.using(depends_on=[first]).enqueue(1, 2)

    result = add.get_result(later.id)
    assert (result.status, result.attempts) == (TaskResultStatus.FAILED, 0)
    assert [e.exception_class_path for e in result.errors] == [
        "django_workhorse.exceptions.JobCancelled"
    ]
    assert f"prerequisite job #{first.id} failed" in result.errors[0].traceback
    assert Admin().get_job(int(later.id)).error["prerequisite"] == int(first.id)


def test_a_task_canceled_while_it_waited_has_the_cancel_as_its_error():
    result = add.enqueue(1, 2)
    Admin().cancel(int(result.id), reason="not wanted")

    found = add.get_result(result.id)

    assert found.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in found.errors] == [
        "django_workhorse.exceptions.JobCancelled"
    ]
    assert found.errors[0].traceback == "django_workhorse.exceptions.JobCancelled: not wanted\n"


def test_a_task_that_raised_job_cancelled_reads_back_its_error_once():
    result = gives_up.enqueue("nothing to do")
    run_jobs(names=[gives_up])

    found = gives_up.get_result(result.id)

    assert [e.exception_class_path for e in found.errors] == [
        "django_workhorse.exceptions.JobCancelled"
    ]
    assert "nothing to do" in found.errors[0].traceback


def takes_no_context() -> None:
    """A module-level function without a ``context`` argument."""


def test_a_function_not_at_module_level_is_refused_as_a_task():
    def inner() -> None:
        pass

    with pytest.raises(InvalidTask, match="module level"):
        task()(inner)


def renamed(label: str) -> str:
    """Made a task under another name below, so its import path is not the task."""
    return label


task_under_another_name = task(queue_name="jobtests.tasks")(renamed)


def test_a_task_its_import_path_does_not_lead_to_is_refused_at_enqueue(db_rows):
    before = db_rows.counts()

    with pytest.raises(InvalidTask, match=r"test_django_tasks_backend\.renamed: that import path"):
        task_under_another_name.enqueue("x")

    assert db_rows.counts() == before


def test_takes_context_without_a_context_argument_is_refused():
    with pytest.raises(InvalidTask, match="first argument of 'context'"):
        task(takes_context=True, queue_name="jobtests.tasks")(takes_no_context)


@pytest.mark.parametrize("priority", [101, -101, 3.1])
def test_a_priority_outside_djangos_bounds_or_not_whole_is_refused(priority):
    with pytest.raises(InvalidTask, match="priority must be a whole number"):
        add.using(priority=priority)


@pytest.mark.parametrize(
    ("priority", "shown"), [(float("nan"), "float nan"), ("1", "str '1'"), ([1], r"list \[1\]")]
)
def test_a_priority_that_is_not_a_number_is_refused_naming_it(priority, shown):
    """Bug: Django's own check raised ValueError (int(nan)) or TypeError (str < int)."""
    with pytest.raises(InvalidTask, match=f"priority must be a whole number .*, got {shown}"):
        add.using(priority=priority)


@pytest.mark.parametrize(("priority", "stored"), [(100, 100), (-100, -100), (5.0, 5), (True, 1)])
def test_every_priority_django_allows_reaches_the_job_as_a_whole_number(priority, stored):
    result = add.using(priority=priority).enqueue(1, 2)
    assert Admin().get_job(int(result.id)).priority == stored
    assert add.get_result(result.id).task.priority == stored


def test_a_naive_run_after_is_refused_when_use_tz_is_on():
    from datetime import datetime

    with pytest.raises(InvalidTask, match="aware datetime"):
        in_order.using(run_after=datetime.now() + timedelta(hours=1))


@pytest.mark.parametrize("run_after", [timedelta(minutes=5), 300, "2030-01-01T00:00:00Z"])
def test_a_run_after_that_is_not_a_datetime_is_refused_naming_it(run_after):
    """Bug: Django's own check raised AttributeError: no attribute 'utcoffset'."""
    with pytest.raises(InvalidTask, match=r"run_after must be an aware datetime .*, got "):
        in_order.using(run_after=run_after)


def test_a_naive_run_after_without_use_tz_is_taken_in_the_current_time_zone():
    from datetime import datetime

    from django.utils import timezone

    with override_settings(USE_TZ=False):
        later = datetime.now() + timedelta(hours=1)
        result = in_order.using(run_after=later).enqueue("later")
        expected = timezone.make_aware(later)
    snapshot = Admin().get_job(int(result.id))
    assert (snapshot.state, snapshot.run_at) == ("scheduled", expected)


def test_get_result_through_another_task_raises_mismatch():
    result = add.enqueue(1, 2)
    with pytest.raises(TaskResultMismatch, match=r"jobtests\.tasks\.add"):
        in_order.get_result(result.id)


def test_aget_result_through_another_task_raises_mismatch():
    from asgiref.sync import async_to_sync

    result = add.enqueue(1, 2)
    with pytest.raises(TaskResultMismatch, match=r"jobtests\.tasks\.add"):
        async_to_sync(in_order.aget_result)(result.id)


def test_get_result_takes_a_whole_number_id_as_django_allows():
    result = add.enqueue(1, 2)
    assert default_task_backend.get_result(int(result.id)).id == result.id


def test_a_result_read_back_has_the_task_it_was_enqueued_with():
    task_used = add.using(priority=9)
    result = task_used.enqueue(1, 2)
    assert result.task == task_used
    assert add.get_result(result.id).task == task_used
    assert async_add.get_result(async_add.enqueue(1, 2).id).task == async_add


def test_a_result_of_a_task_enqueued_through_another_backend_refreshes_there(settings):
    with override_settings(TASKS={**settings.TASKS, "tuned": {**TUNED, "QUEUES": []}}):
        result = add.using(backend="tuned").enqueue(1, 2)
        found = task_backends["tuned"].get_result(result.id)
        assert (found.backend, found.task.backend) == ("tuned", "tuned")
        run_jobs(names=[add])
        found.refresh()
        assert (found.status, found.return_value) == ("SUCCESSFUL", 3)


def test_task_enqueued_is_sent_by_the_backend_class_with_the_result_enqueue_returns():
    sent = []

    def on_enqueued(sender, task_result, **kwargs):
        sent.append((sender, task_result))

    task_enqueued.connect(on_enqueued)
    try:
        result = add.enqueue(1, 2)
    finally:
        task_enqueued.disconnect(on_enqueued)
    assert sent == [(WorkhorseBackend, result)]
    assert result.status == TaskResultStatus.READY and result.enqueued_at is not None


def test_return_value_raises_until_the_task_has_finished():
    result = add.enqueue(1, 2)
    with pytest.raises(ValueError, match="not finished yet"):
        result.return_value  # noqa: B018
    run_jobs(names=[add])
    result.refresh()
    assert result.return_value == 3


def test_the_context_of_a_context_task_holds_its_running_result():
    result = fails_once.enqueue(label="ctx")
    run_jobs(names=[fails_once])
    found = fails_once.get_result(result.id)
    assert (found.status, found.return_value) == ("SUCCESSFUL", {"attempt": 2, "worker_ids": 2})


def finished_statuses(run) -> list[tuple[str, list[str]]]:
    """``(status, error class paths)`` of each ``task_finished`` sent while
    ``run()`` ran, collected in memory (run_jobs' savepoint undoes a failing
    run's writes, a receiver's too)."""
    sent: list[tuple[str, list[str]]] = []

    def on_finished(sender, task_result, **kwargs):
        sent.append((task_result.status, [e.exception_class_path for e in task_result.errors]))

    task_finished.connect(on_finished)
    try:
        run()
    finally:
        task_finished.disconnect(on_finished)
    return sent


@pytest.mark.parametrize(
    ("a_task", "problem"),
    [
        (returns_a_date, "is a datetime, which is not JSON"),
        (returns_int_keys, "has the key 1; JSON object keys must be strings"),
    ],
)
def test_a_task_returning_what_is_not_json_finishes_failed_after_one_attempt(a_task, problem):
    result = a_task.enqueue()

    sent = finished_statuses(lambda: run_jobs(names=[a_task]))

    refusal = "django_workhorse.exceptions.InvalidPayloadError"
    assert sent == [(TaskResultStatus.FAILED, [refusal])]
    found = a_task.get_result(result.id)
    assert (found.status, found.attempts) == (TaskResultStatus.FAILED, 1)
    assert [e.exception_class_path for e in found.errors] == [refusal]
    assert problem in found.errors[0].traceback


def test_a_task_taking_a_durable_sleep_finishes_ready_without_an_error_then_runs_again():
    result = naps.enqueue("rested")

    sent = finished_statuses(lambda: run_jobs(names=[naps]))

    assert sent == [(TaskResultStatus.READY, []), (TaskResultStatus.SUCCESSFUL, [])]
    found = naps.get_result(result.id)
    assert (found.status, found.return_value, found.attempts) == ("SUCCESSFUL", "rested", 1)
    assert found.errors == []


def test_a_task_whose_checkpoint_is_refused_finishes_failed_with_attempts_left():
    result = checkpoints_a_date.enqueue()

    sent = finished_statuses(lambda: run_jobs(names=[checkpoints_a_date]))

    refusal = "django_workhorse.exceptions.InvalidCheckpointError"
    assert sent == [(TaskResultStatus.FAILED, [refusal])]
    found = checkpoints_a_date.get_result(result.id)
    assert (found.status, found.attempts) == (TaskResultStatus.FAILED, 1)


def test_a_task_run_that_lost_its_lease_says_ready_not_failed_on_its_last_attempt():
    loses_its_lease.enqueue()

    def run() -> None:
        # run_jobs raises what ended the run: nothing of it could be written.
        with pytest.raises(LeaseLost):
            run_jobs(names=[loses_its_lease])

    sent = finished_statuses(run)

    # Its job belongs to another run now, which decides how the task ends.
    assert sent == [(TaskResultStatus.READY, ["django_workhorse.context.LeaseLost"])]


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse", "jobtests"])
def test_a_task_released_by_its_prerequisite_has_no_run_after():
    """A task enqueued to run at once reads back with run_after None after its
    prerequisite released it, though the release moved its run_at on."""
    prerequisite = enqueue("jobtests.jobs.record", label="first")
    result = add.using(depends_on=[prerequisite]).enqueue(1, 2)
    assert add.get_result(result.id).task.run_after is None

    run_jobs(names=["jobtests.jobs.record"])  # a transaction later than the enqueue's

    found = add.get_result(result.id)
    assert found.status == TaskResultStatus.READY
    assert found.task.run_after is None
