"""``manage.py check`` resolves each settings schedule's job and payload, as a
worker's start does, and warns about a schedule finer than the sweep."""

from datetime import UTC, datetime

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured

from django_workhorse.core.schedules import declared

RECORD = "jobtests.jobs.record"


def schedule_messages(settings, schedules: dict, **workhorse) -> list:
    settings.WORKHORSE = {"SCHEDULES": schedules, **workhorse}
    return [m for m in run_checks(tags=["workhorse"], databases=[]) if m.id.startswith("workhorse")]


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ({"label": datetime(2026, 1, 1, tzinfo=UTC)}, "payload['label'] is a datetime"),
        ({"label": float("nan")}, "payload['label'] is nan, which JSON cannot hold"),
    ],
)
def test_a_payload_that_is_not_json_is_refused_naming_the_schedule(payload, fragment):
    with pytest.raises(ImproperlyConfigured) as raised:
        declared("default", {"n": {"job": RECORD, "cron": "* * * * *", "payload": payload}})

    assert str(raised.value).startswith("WORKHORSE['SCHEDULES']['n']: ")
    assert fragment in str(raised.value)


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ({"job": "nope", "cron": "0 3 * * *"}, "no job named 'nope'"),
        ({"job": RECORD, "cron": "0 3 * * *", "payload": {"z": 1}}, "payload does not fit"),
        (
            {"job": RECORD, "cron": "0 3 * * *", "payload": {"label": datetime(2026, 1, 1)}},
            "is a datetime, which is not JSON",
        ),
        ({"job": RECORD, "cron": "0 3 * * *", "payload": {"label": float("nan")}}, "nan"),
    ],
)
def test_manage_py_check_resolves_each_schedules_job_and_payload(settings, entry, fragment):
    messages = schedule_messages(settings, {"nightly": entry})

    [error] = [m for m in messages if m.id == "workhorse.E003"]
    assert error.msg.startswith("WORKHORSE['SCHEDULES']['nightly']: ")
    assert fragment in error.msg
    assert "WORKHORSE['SCHEDULES']['nightly']" in error.hint


def test_a_good_schedule_passes_the_check(settings):
    entry = {"job": RECORD, "cron": "0 3 * * *", "payload": {"label": "x"}}

    assert schedule_messages(settings, {"nightly": entry}) == []


def test_a_misshapen_entry_is_reported_once_as_a_settings_error(settings):
    messages = schedule_messages(settings, {"n": {"job": "nope", "cron": "nope"}})

    assert [m.id for m in messages] == ["workhorse.E001"]


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ({"cron": "0 3 * * *"}, "at least 'job' and 'cron'; add 'job'"),
        ({"job": 3, "cron": "0 3 * * *"}, "'job' must be the name of a registered job, got int 3"),
        ({"job": RECORD, "cron": "0 3 * * *", "timezone": "Mars/Olympus"}, "Mars/Olympus"),
        (
            {"job": RECORD, "cron": "0 3 * * *", "catch_up": "some"},
            "'catch_up' must be one of 'latest', 'all', got 'some'",
        ),
        ({"job": RECORD, "cron": "0 3 * * *", "colour": "red"}, "colour"),
    ],
)
def test_a_bad_shape_time_zone_or_catch_up_is_e001_naming_the_schedule(settings, entry, fragment):
    messages = schedule_messages(settings, {"nightly": entry})

    [error] = messages
    assert error.id == "workhorse.E001"
    assert error.msg.startswith("WORKHORSE['SCHEDULES']['nightly']")
    assert fragment in error.msg


def test_a_latest_schedule_finer_than_the_sweep_is_warned_about(settings):
    entry = {"job": RECORD, "cron": "*/5 * * * * *"}

    [warning] = schedule_messages(settings, {"tick": entry})

    assert warning.id == "workhorse.W004"
    assert "'tick'" in warning.msg
    assert "5 s apart" in warning.msg and "SCHEDULE_SWEEP_INTERVAL (15 s)" in warning.msg
    assert "SCHEDULE_SWEEP_INTERVAL'] to at most 5" in warning.hint
    assert "'catch_up': 'all'" in warning.hint


@pytest.mark.parametrize(
    ("entry", "workhorse"),
    [
        ({"job": RECORD, "cron": "*/5 * * * * *", "catch_up": "all"}, {}),
        ({"job": RECORD, "cron": "*/5 * * * * *"}, {"SCHEDULE_SWEEP_INTERVAL": 5}),
        ({"job": RECORD, "cron": "* * * * *"}, {}),
    ],
)
def test_a_schedule_the_sweep_keeps_up_with_is_not_warned_about(settings, entry, workhorse):
    assert schedule_messages(settings, {"tick": entry}, **workhorse) == []


def test_a_job_schedule_finer_than_the_sweep_is_warned_about(settings, monkeypatch):
    import django_workhorse as workhorse
    from django_workhorse.core import registry

    monkeypatch.setattr(registry, "_jobs", dict(registry._jobs))

    @workhorse.job(name="tests.checks.every_ten_seconds", schedule="*/10 * * * * *")
    def every_ten_seconds() -> None:
        pass

    [warning] = schedule_messages(settings, {})

    assert warning.id == "workhorse.W004"
    assert "job 'tests.checks.every_ten_seconds'" in warning.msg
    assert "declare it in WORKHORSE['SCHEDULES'] with 'catch_up': 'all'" in warning.hint


@pytest.mark.parametrize("name", ["nightly\n", ".nightly"])
def test_a_name_the_schedule_table_would_refuse_is_e001_naming_the_rule(settings, name):
    # The table's CHECK refuses both; caught here, the worker never fails its sync.
    messages = schedule_messages(settings, {name: {"job": RECORD, "cron": "0 3 * * *"}})

    [error] = messages
    assert error.id == "workhorse.E001"
    assert error.msg.startswith(f"WORKHORSE['SCHEDULES'][{name!r}]")
    assert "not starting with '.', ':' or '-'" in error.msg


def test_a_settings_schedule_named_like_a_job_schedule_is_e003_naming_it(settings, monkeypatch):
    import django_workhorse as workhorse
    from django_workhorse.core import registry

    monkeypatch.setattr(registry, "_jobs", dict(registry._jobs))

    @workhorse.job(name="tests.checks.hourly", schedule="0 * * * *")
    def hourly() -> None:
        pass

    messages = schedule_messages(
        settings, {"tests.checks.hourly": {"job": RECORD, "cron": "0 3 * * *"}}
    )

    [error] = messages
    assert error.id == "workhorse.E003"
    assert error.msg.startswith("WORKHORSE['SCHEDULES']['tests.checks.hourly']: ")
    assert "already declares a schedule with @job(schedule=...)" in error.msg
    assert "give this schedule another name" in error.msg
