"""``workhorse.current_job()`` tells a handler which job it runs, and only then."""

import pytest

import django_workhorse as workhorse
from django_workhorse.context import JobContext, reset_current, set_current


def test_current_job_outside_a_job_raises_not_in_job_error_with_a_clear_message():
    with pytest.raises(workhorse.NotInJobError) as exc:
        workhorse.current_job()
    assert "current_job()" in str(exc.value)
    assert "outside a running job" in str(exc.value)


def test_current_job_inside_a_job_returns_its_context_until_reset():
    context = JobContext(job_id=7, name="demo.jobs.add", queue="default", attempt=1, max_attempts=5)
    token = set_current(context)
    try:
        assert workhorse.current_job() is context
    finally:
        reset_current(token)
    with pytest.raises(workhorse.NotInJobError):
        workhorse.current_job()


def test_raise_if_canceled_raises_only_once_cancel_was_requested():
    context = JobContext(job_id=7, name="demo.jobs.add", queue="default", attempt=1, max_attempts=5)
    context.raise_if_canceled()
    context._request_cancel()
    assert context.cancel_requested
    with pytest.raises(workhorse.JobCanceledError, match="job 7"):
        context.raise_if_canceled()


@workhorse.job(queue="tests.context", name="tests.context.reads_its_job")
def reads_its_job() -> int:
    return workhorse.current_job().attempt


def test_a_job_called_directly_has_no_current_job_and_the_error_names_run_jobs():
    with pytest.raises(workhorse.NotInJobError, match=r"run_jobs\(\).*called directly"):
        reads_its_job()
