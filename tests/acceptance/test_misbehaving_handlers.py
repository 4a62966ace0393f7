"""No handler crashes or wedges its worker, whatever it does.

Each test runs one misbehaving handler (``jobtests.poison_jobs``) among
well-behaved jobs of the same queue on a real ``runworker`` with one slot,
so the jobs after it run on the very thread (or event loop) it used. The
worker must record the bad run as ``docs/worker.md`` says, with an error
naming what happened, run the others, and stop on SIGTERM with exit 0.
"""

from __future__ import annotations

import pytest
from jobtests.models import RunRecord
from jobtests.poison_jobs import amate, apoison, mate, poison

from django_workhorse.models import AttemptHistory, JobOutcome
from django_workhorse.worker.outcomes import MESSAGE_LIMIT

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

MATES = 3


def run_among_mates(start_worker, wait_until, kind: str, *, is_async: bool = False, **options):
    """Run the poison ``kind`` before and among ``MATES`` well-behaved jobs
    on one slot; check the worker ran them all and stops cleanly; return the
    poison's outcome and the worker."""
    job, mate_job, queue = (
        (apoison, amate, "jobtests.apoison")
        if is_async
        else (
            poison,
            mate,
            "jobtests.poison",
        )
    )
    bad = job.options(**options).enqueue(kind=kind)
    mates = [mate_job.enqueue(label=f"mate {i}").id for i in range(MATES)]
    worker = start_worker("--queues", queue, "--concurrency", "1", settings={"SHUTDOWN_GRACE": 2})
    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=[bad.id, *mates]).count() == MATES + 1,
        timeout=30,
        what=f"the {kind} job and its mates ended",
    )
    assert worker.alive(), f"the worker died on {kind}"
    states = list(JobOutcome.objects.filter(job_id__in=mates).values_list("state", flat=True))
    assert states == ["succeeded"] * MATES, f"jobs after {kind} did not all succeed"
    assert worker.stop() == 0
    return JobOutcome.objects.get(job_id=bad.id), worker


@pytest.mark.parametrize(
    ("kind", "error_type"),
    [
        ("system_exit", "builtins.SystemExit"),
        ("keyboard_interrupt", "builtins.KeyboardInterrupt"),
        ("generator_exit", "builtins.GeneratorExit"),
        ("custom_base", "jobtests.poison_jobs.CustomBaseError"),
    ],
)
def test_a_handler_raising_a_base_exception_fails_its_job_alone(
    start_worker, wait_until, kind, error_type
):
    outcome, _ = run_among_mates(start_worker, wait_until, kind)
    assert (outcome.state, outcome.error["type"]) == ("failed", error_type)


def test_an_exception_whose_str_raises_is_recorded_without_stopping_the_worker(
    start_worker, wait_until
):
    """Bug: the writer called ``str(exc)`` unguarded, and the RuntimeError
    it raised stopped the writer and so the worker (exit 1)."""
    outcome, _ = run_among_mates(start_worker, wait_until, "str_raises")
    assert outcome.state == "failed"
    assert outcome.error["type"] == "jobtests.poison_jobs.StrRaises"
    assert outcome.error["message"] == "<str() of the StrRaises raised RuntimeError>"
    assert "StrRaises" in outcome.error["traceback"]


def test_an_exception_with_a_message_of_megabytes_is_stored_and_logged_cut(
    start_worker, wait_until
):
    outcome, worker = run_among_mates(start_worker, wait_until, "huge_text")
    message = outcome.error["message"]
    assert message.startswith("huge xxx")
    assert message.endswith(f"... ({5_000_005 - MESSAGE_LIMIT} more characters)")
    assert len(outcome.error["traceback"]) <= 16_000
    failed_line = next(line for line in worker.stderr.splitlines() if "failed at attempt" in line)
    assert len(failed_line) < MESSAGE_LIMIT + 500


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("cyclic_causes", "first of a cycle"),
        ("long_chain", "link 4999"),
        ("recursion", "maximum recursion depth exceeded"),
    ],
)
def test_an_exception_with_a_cyclic_long_or_deep_traceback_fails_its_job(
    start_worker, wait_until, kind, message
):
    outcome, _ = run_among_mates(start_worker, wait_until, kind)
    assert outcome.state == "failed"
    assert outcome.error["message"] == message


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("result_items_raise", "RuntimeError: items() of ItemsRaise fails"),
        ("result_iter_raises", "RuntimeError: __iter__ of IterRaises fails"),
    ],
)
def test_a_result_whose_reading_raises_fails_its_job_not_the_worker(
    start_worker, wait_until, kind, reason
):
    """Bug: the exception escaped ``encode_result`` on the writer's (or the
    claiming handler's) thread and stopped the worker with exit 1."""
    outcome, _ = run_among_mates(start_worker, wait_until, kind)
    assert (outcome.state, outcome.error["type"]) == (
        "failed",
        "django_workhorse.exceptions.InvalidPayloadError",
    )
    assert f"the return value cannot be read as JSON: {reason}" in outcome.error["message"]


@pytest.mark.parametrize("kind", ["result_deep", "result_cyclic"])
def test_a_result_nested_too_deep_or_cyclic_fails_its_job(start_worker, wait_until, kind):
    outcome, _ = run_among_mates(start_worker, wait_until, kind)
    assert outcome.state == "failed"
    assert "nests lists and objects more than" in outcome.error["message"]


@pytest.mark.parametrize("kind", ["open_atomic", "open_autocommit"])
def test_a_transaction_left_open_fails_the_attempt_and_the_next_jobs_run(
    start_worker, wait_until, kind
):
    """Bug: an atomic block entered by hand stayed open on the slot's thread
    and every later job there failed with 'connection already closed'; a
    transaction left open with autocommit off was rolled back while its job
    was recorded as a success."""
    outcome, _ = run_among_mates(start_worker, wait_until, kind)
    assert (outcome.state, outcome.error["type"]) == (
        "failed",
        "django.db.transaction.TransactionManagementError",
    )
    assert "transaction open on database 'default'" in outcome.error["message"]
    assert not RunRecord.objects.filter(label="uncommitted").exists()


@pytest.mark.parametrize("kind", ["close_connection", "break_connection"])
def test_a_handler_that_closes_its_connection_does_not_hurt_the_next_jobs(
    start_worker, wait_until, kind
):
    outcome, _ = run_among_mates(start_worker, wait_until, kind)
    assert outcome.state == "succeeded"


def test_a_handler_whose_session_is_terminated_fails_with_the_database_error(
    start_worker, wait_until
):
    outcome, _ = run_among_mates(start_worker, wait_until, "terminate_backend")
    assert outcome.state == "failed"
    assert "terminating connection" in outcome.error["message"]


def test_a_handler_cannot_change_the_workers_signal_handlers(start_worker, wait_until):
    outcome, _ = run_among_mates(start_worker, wait_until, "signal_handlers")
    assert outcome.state == "failed"
    assert "signal only works in main thread" in outcome.error["message"]


def test_a_handler_blocked_in_the_database_past_its_timeout_is_timed_out(start_worker, wait_until):
    bad = poison.options(timeout=1).enqueue(kind="pg_sleep")
    worker = start_worker("--queues", "jobtests.poison", "--concurrency", "2")
    wait_until(lambda: JobOutcome.objects.filter(job_id=bad.id).exists(), what="the timeout")
    mates = [mate.enqueue(label=f"mate {i}").id for i in range(MATES)]
    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=mates, state="succeeded").count() == MATES,
        what="the mates ran in the other slot",
    )
    assert AttemptHistory.objects.get(job_id=bad.id).outcome == "timed_out"
    wait_until(
        lambda: RunRecord.objects.filter(job_id=bad.id, label="slept").exists(),
        what="the abandoned handler came back from the database",
    )
    assert worker.stop() == 0


def test_a_non_daemon_thread_left_by_a_handler_does_not_keep_a_stopped_worker_alive(
    start_worker, wait_until
):
    """Bug: Python waited for the thread at exit, so the worker never
    exited after SIGTERM (nor after a second one)."""
    outcome, worker = run_among_mates(start_worker, wait_until, "non_daemon_thread")
    assert outcome.state == "succeeded"
    assert "1 non-daemon thread(s) started by handlers still run (lingering)" in worker.stderr


@pytest.mark.parametrize("kind", ["environ_cwd", "log_exc_info", "print_megabytes"])
def test_a_handler_that_changes_the_process_or_floods_its_output_harms_no_other_job(
    start_worker, wait_until, kind
):
    outcome, _ = run_among_mates(start_worker, wait_until, kind)
    assert outcome.state == "succeeded"


@pytest.mark.parametrize(
    ("kind", "error_type"),
    [("system_exit", "builtins.SystemExit"), ("keyboard_interrupt", "builtins.KeyboardInterrupt")],
)
def test_an_async_handler_raising_a_base_exception_fails_its_job_alone(
    start_worker, wait_until, kind, error_type
):
    outcome, _ = run_among_mates(start_worker, wait_until, kind, is_async=True)
    assert (outcome.state, outcome.error["type"]) == ("failed", error_type)


@pytest.mark.parametrize(
    ("kind", "error_type"),
    [
        ("child_system_exit", "builtins.SystemExit"),
        ("child_keyboard_interrupt", "builtins.KeyboardInterrupt"),
    ],
)
def test_a_child_task_raising_a_base_exception_fails_its_job_and_the_loop_goes_on(
    start_worker, wait_until, kind, error_type
):
    """Bug: asyncio let the exception out of the child task's step, which
    ended the event loop's thread; every async job then hung, leased."""
    outcome, _ = run_among_mates(start_worker, wait_until, kind, is_async=True)
    assert (outcome.state, outcome.error["type"]) == ("failed", error_type)


def test_a_loop_callback_raising_system_exit_is_logged_and_the_loop_goes_on(
    start_worker, wait_until
):
    outcome, worker = run_among_mates(
        start_worker, wait_until, "callback_system_exit", is_async=True
    )
    assert outcome.state == "succeeded"
    assert "raised past the event loop; the loop goes on" in worker.stderr


def test_an_async_handler_that_never_yields_past_its_timeout_is_timed_out(start_worker, wait_until):
    """Bug: the loop never got to fire the timeout, so the run that blocked
    it past its deadline was recorded as a success."""
    outcome, _ = run_among_mates(start_worker, wait_until, "never_yields", is_async=True, timeout=1)
    assert outcome.state == "failed"
    assert outcome.error["type"] == "django_workhorse.exceptions.JobTimeout"
    assert AttemptHistory.objects.get(job_id=outcome.job_id).outcome == "timed_out"


def test_an_async_handler_that_cancels_itself_fails_with_cancelled_error(start_worker, wait_until):
    outcome, _ = run_among_mates(start_worker, wait_until, "cancels_itself", is_async=True)
    assert (outcome.state, outcome.error["type"]) == ("failed", "asyncio.exceptions.CancelledError")
