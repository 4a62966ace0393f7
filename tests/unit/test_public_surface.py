"""The names the docs tell users to use are importable from ``django_workhorse``."""

import django_workhorse as workhorse
from django_workhorse import exceptions
from django_workhorse.db import store


def test_every_name_in_all_is_importable_from_the_package():
    missing = [name for name in workhorse.__all__ if not hasattr(workhorse, name)]
    assert missing == []


def test_the_values_the_docs_name_are_public():
    # ON_JOB_FAILURE receives a StalledJobError for a stalled job (settings.md),
    # set_queue_limits returns a QueueLimits (settings.md), list_schedules gives
    # ScheduleRows (schedules.md).
    assert workhorse.StalledJobError is exceptions.StalledJobError
    assert workhorse.QueueLimits is store.QueueLimits
    assert workhorse.ScheduleRow is store.ScheduleRow


def test_every_exception_of_the_package_is_public():
    errors = {
        value.__name__
        for value in vars(exceptions).values()
        if isinstance(value, type)
        and issubclass(value, BaseException)
        and value.__module__ == exceptions.__name__
    }
    assert errors - set(workhorse.__all__) == set()


def test_job_timeout_is_public():
    from django_workhorse.exceptions import JobTimeout

    assert workhorse.JobTimeout is JobTimeout
    assert issubclass(workhorse.JobTimeout, TimeoutError)


def test_what_on_job_canceled_receives_has_one_name_and_the_old_one_warns():
    import pytest

    from django_workhorse.core import hooks

    assert "JobCanceled" not in workhorse.__all__
    with pytest.warns(DeprecationWarning, match=r"django_workhorse\.JobCanceled is deprecated"):
        old = workhorse.JobCanceled
    assert old is workhorse.JobCancel is hooks.JobCancel
    with pytest.warns(DeprecationWarning, match="not to be confused with the exception"):
        from django_workhorse.core.hooks import JobCanceled  # noqa: F401
    assert workhorse.JobCanceledError is not workhorse.JobCancel


def test_cancel_has_one_spelling_in_the_public_names_and_the_old_exception_name_warns():
    import pytest

    from django_workhorse.exceptions import JobCanceledError, JobCancelled

    assert not [name for name in workhorse.__all__ if "cancelled" in name.lower()]
    with pytest.warns(
        DeprecationWarning, match=r"JobCancelled is deprecated: it is .*JobCanceledError"
    ):
        old = workhorse.JobCancelled
    assert old is JobCanceledError is JobCancelled  # so `except` clauses of either name hold


def test_raise_if_cancelled_warns_and_does_what_raise_if_canceled_does():
    import pytest

    from django_workhorse.context import JobContext

    ctx = JobContext(job_id=1, name="n", queue="q", attempt=1, max_attempts=1, using="default")
    ctx._request_cancel()
    with (
        pytest.warns(DeprecationWarning, match=r"raise_if_canceled\(\)"),
        pytest.raises(workhorse.JobCanceledError, match="job 1 was canceled by an operator"),
    ):
        ctx.raise_if_cancelled()


def test_an_unknown_name_is_still_an_attribute_error():
    import pytest

    with pytest.raises(AttributeError, match="has no attribute 'NoSuchThing'"):
        workhorse.NoSuchThing  # noqa: B018
