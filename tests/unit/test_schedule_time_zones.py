"""Which time zone a schedule's cron is read in (docs/schedules.md): a
``@job(schedule=...)`` schedule reads it in Django's ``TIME_ZONE``; a
settings schedule in its own ``"timezone"``, which defaults to UTC whatever
``TIME_ZONE`` says."""

from __future__ import annotations

import pytest
from django.test import override_settings

import django_workhorse as workhorse
from django_workhorse.core import registry
from django_workhorse.core.schedules import declared


@pytest.fixture
def report_job(monkeypatch):
    monkeypatch.setattr(registry, "_jobs", dict(registry._jobs))

    @workhorse.job(name="audit.reports.daily", queue="audit.reports", schedule="0 3 * * *")
    def daily() -> None: ...

    @workhorse.job(name="audit.reports.weekly", queue="audit.reports")
    def weekly(kind: str) -> None: ...

    return daily


def by_name(schedules) -> dict:
    return {s.name: s for s in schedules}


def test_a_job_schedule_reads_its_cron_in_djangos_time_zone(report_job):
    with override_settings(TIME_ZONE="Europe/Paris"):
        schedule = by_name(declared("default", {}))["audit.reports.daily"]
    assert (schedule.cron, schedule.timezone) == ("0 3 * * *", "Europe/Paris")
    with override_settings(TIME_ZONE="America/New_York"):
        assert by_name(declared("default", {}))["audit.reports.daily"].timezone == (
            "America/New_York"
        )


def test_a_settings_schedule_is_read_in_utc_unless_it_names_a_time_zone(report_job):
    entries = {
        "weekly-utc": {
            "job": "audit.reports.weekly",
            "cron": "0 4 * * 1",
            "payload": {"kind": "a"},
        },
        "weekly-tokyo": {
            "job": "audit.reports.weekly",
            "cron": "0 4 * * 1",
            "timezone": "Asia/Tokyo",
            "payload": {"kind": "b"},
        },
    }
    with override_settings(TIME_ZONE="Europe/Paris"):
        found = by_name(declared("default", entries))
    assert found["weekly-utc"].timezone == "UTC"
    assert found["weekly-tokyo"].timezone == "Asia/Tokyo"


@pytest.mark.parametrize("zone", ["localtime", "posixrules", "Factory", "posix/Europe/Paris"])
def test_a_zone_file_that_is_no_iana_zone_is_refused_by_the_check(settings, zone):
    # Each loads with ZoneInfo; 'localtime' is each host's own zone, so two
    # hosts in different zones would each plan their own slots.
    from django.core.checks import run_checks

    settings.WORKHORSE = {
        "SCHEDULES": {
            "nightly": {"job": "jobtests.jobs.record", "cron": "0 3 * * *", "timezone": zone}
        }
    }
    [error] = [m for m in run_checks(tags=["workhorse"], databases=[]) if m.id == "workhorse.E001"]

    assert error.msg.startswith("WORKHORSE['SCHEDULES']['nightly']")
    assert f"timezone {zone!r} is not an IANA time zone name" in error.msg


def test_a_job_schedule_is_refused_when_djangos_time_zone_is_the_hosts_own(monkeypatch):
    monkeypatch.setattr(registry, "_jobs", dict(registry._jobs))

    with (
        override_settings(TIME_ZONE="localtime"),
        pytest.raises(workhorse.InvalidJobOptionError, match="'localtime' is not an IANA"),
    ):

        @workhorse.job(name="audit.reports.hourly", queue="audit.reports", schedule="0 * * * *")
        def hourly() -> None: ...
