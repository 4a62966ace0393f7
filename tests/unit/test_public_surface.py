"""The names the docs tell users to use are importable from ``django_workhorse``."""

import django_workhorse as workhorse
from django_workhorse import exceptions, store


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
        name
        for name, value in vars(exceptions).items()
        if isinstance(value, type)
        and issubclass(value, BaseException)
        and value.__module__ == exceptions.__name__
    }
    assert errors - set(workhorse.__all__) == set()
