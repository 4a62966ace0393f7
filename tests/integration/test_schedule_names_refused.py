"""``Admin().pause_schedule`` / ``resume_schedule`` (docs/schedules.md) refuse
a name that cannot be a schedule's with ``InvalidQueryError`` before any SQL,
and name a missing one with ``UnknownScheduleError``."""

from __future__ import annotations

import pytest

import django_workhorse as workhorse

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("action", ["pause_schedule", "resume_schedule"])
@pytest.mark.parametrize(
    ("name", "message"),
    [
        (5, "a schedule name is a non-empty string, got 5"),
        ("", "a schedule name is a non-empty string, got ''"),
        (None, "a schedule name is a non-empty string, got None"),
        ("night\x00ly", "the schedule name contains a NUL character"),
    ],
)
def test_a_name_that_cannot_be_a_schedules_is_refused_before_any_sql(action, name, message):
    with pytest.raises(workhorse.InvalidQueryError) as raised:
        getattr(workhorse.Admin(), action)(name)
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize("action", ["pause_schedule", "resume_schedule"])
def test_a_missing_schedule_is_named(action):
    with pytest.raises(workhorse.UnknownScheduleError, match="no schedule named 'audit-none'"):
        getattr(workhorse.Admin(), action)("audit-none")
