"""Which slots a sweep enqueues, read from the cron expression by cronsim."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from django_workhorse.core.conf import problems, raw_settings
from django_workhorse.core.cron import ALL_SLOTS_PER_SWEEP, cron_problem
from django_workhorse.core.schedules import plan

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def test_an_unplanned_schedule_enqueues_nothing_and_plans_the_first_slot_after_now():
    slots, upcoming = plan("*/5 * * * *", "UTC", "latest", None, T0 + timedelta(minutes=1))

    assert slots == []
    assert upcoming == T0 + timedelta(minutes=5)


def test_a_due_slot_is_enqueued_and_the_next_one_planned():
    slots, upcoming = plan("* * * * * *", "UTC", "latest", T0, T0 + timedelta(milliseconds=300))

    assert slots == [T0]
    assert upcoming == T0 + timedelta(seconds=1)


def test_missed_slots_make_one_job_for_the_latest_by_default():
    now = T0 + timedelta(minutes=37, seconds=20)

    slots, upcoming = plan("*/5 * * * *", "UTC", "latest", T0, now)

    assert slots == [T0 + timedelta(minutes=35)]
    assert upcoming == T0 + timedelta(minutes=40)


def test_catch_up_all_makes_one_job_per_missed_slot():
    now = T0 + timedelta(minutes=17)

    slots, upcoming = plan("*/5 * * * *", "UTC", "all", T0, now)

    assert slots == [T0 + timedelta(minutes=m) for m in (0, 5, 10, 15)]
    assert upcoming == T0 + timedelta(minutes=20)


def test_catch_up_all_takes_a_bounded_number_of_slots_per_sweep():
    slots, upcoming = plan("* * * * * *", "UTC", "all", T0, T0 + timedelta(hours=1))

    assert len(slots) == ALL_SLOTS_PER_SWEEP
    assert upcoming == T0 + timedelta(seconds=ALL_SLOTS_PER_SWEEP)


def test_the_cron_is_read_in_the_schedules_time_zone():
    paris = ZoneInfo("Europe/Paris")
    _slots, upcoming = plan("0 3 * * *", "Europe/Paris", "latest", None, T0)

    assert upcoming == datetime(2026, 3, 2, 3, 0, tzinfo=paris)
    assert upcoming.astimezone(UTC) == datetime(2026, 3, 2, 2, 0, tzinfo=UTC)


def test_a_daily_slot_inside_the_spring_forward_gap_runs_once_right_after_it():
    # 2026-03-29 02:30 does not exist in Paris; Debian cron's rule (cronsim's)
    # runs such a job once, at the first moment after the gap.
    paris = ZoneInfo("Europe/Paris")
    before = datetime(2026, 3, 29, 1, 0, tzinfo=paris)

    _, upcoming = plan("30 2 * * *", "Europe/Paris", "latest", None, before)

    assert upcoming.astimezone(UTC) == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)


def slots_between(cron: str, zone: str, start: datetime, end: datetime) -> list[datetime]:
    """Every slot of ``cron`` after ``start`` up to ``end``, in UTC."""
    _, upcoming = plan(cron, zone, "all", None, start)
    slots, _ = plan(cron, zone, "all", upcoming, end)
    return [slot.astimezone(UTC) for slot in slots]


# Europe/Paris falls back on 2026-10-25: 03:00 CEST (01:00Z) becomes 02:00 CET,
# so the wall-clock hour 02:00-03:00 happens twice (00:00Z-01:00Z, 01:00Z-02:00Z).
FALL_BACK_START = datetime(2026, 10, 24, 23, 0, tzinfo=UTC)
FALL_BACK_END = datetime(2026, 10, 25, 2, 30, tzinfo=UTC)


def test_a_daily_slot_inside_the_repeated_fall_back_hour_runs_once():
    # Neither the minute nor the hour field starts with "*": cronsim reads the
    # expression on the wall clock and takes the first 02:30 only.
    assert slots_between("30 2 * * *", "Europe/Paris", FALL_BACK_START, FALL_BACK_END) == [
        datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    ]


def test_a_schedule_planned_in_the_repeated_hour_gets_a_slot_after_now():
    # At 02:00 CET (01:00Z), the wall-clock 02:30 next in line is the first
    # one, 00:30Z, already past: the first slot is the next day's.
    now = datetime(2026, 10, 25, 1, 0, tzinfo=UTC)

    unplanned, first = plan("30 2 * * *", "Europe/Paris", "latest", None, now)
    # A schedule whose 00:30Z slot is due: it is enqueued, and not planned again.
    planned = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    latest, after_latest = plan("30 2 * * *", "Europe/Paris", "latest", planned, now)
    every, after_every = plan("30 2 * * *", "Europe/Paris", "all", planned, now)

    next_day = datetime(2026, 10, 26, 1, 30, tzinfo=UTC)
    assert (unplanned, first.astimezone(UTC)) == ([], next_day)
    assert (latest, after_latest.astimezone(UTC)) == ([planned], next_day)
    assert (every, after_every.astimezone(UTC)) == ([planned], next_day)


def test_an_hour_field_starting_with_a_star_runs_twice_in_the_repeated_hour():
    # "*/2" in the hour field: cronsim follows real time, and 02:00 happens twice.
    assert slots_between("0 */2 * * *", "Europe/Paris", FALL_BACK_START, FALL_BACK_END) == [
        datetime(2026, 10, 25, 0, 0, tzinfo=UTC),
        datetime(2026, 10, 25, 1, 0, tzinfo=UTC),
    ]


def test_an_hour_field_starting_with_a_star_skips_the_missing_slot_at_spring_forward():
    # 2026-03-29 02:30 does not exist in Paris and "30 */2" has no fix-up: the
    # slots go from 00:30 CET (23:30Z) straight to 04:30 CEST (02:30Z).
    start = datetime(2026, 3, 28, 23, 0, tzinfo=UTC)
    end = datetime(2026, 3, 29, 3, 0, tzinfo=UTC)

    assert slots_between("30 */2 * * *", "Europe/Paris", start, end) == [
        datetime(2026, 3, 28, 23, 30, tzinfo=UTC),
        datetime(2026, 3, 29, 2, 30, tzinfo=UTC),
    ]


@pytest.mark.parametrize(
    ("cron", "zone", "fragment"),
    [
        ("every day", "UTC", "is not valid"),
        ("61 * * * *", "UTC", "is not valid"),
        ("", "UTC", "must be a string"),
        ("0 0 15W * *", "UTC", "is not valid"),  # cronsim reads LW, not a day number's W
        ("0 3 * * *", "Mars/Olympus", "not an IANA time zone"),
    ],
)
def test_a_bad_cron_or_time_zone_is_named(cron, zone, fragment):
    assert fragment in cron_problem(cron, zone)


@pytest.mark.parametrize(
    ("schedules", "fragment"),
    [
        ({"n": {"cron": "* * * * *"}}, "at least 'job' and 'cron'"),
        ({"n": {"job": "x", "cron": "nope"}}, "is not valid"),
        ({"n": {"job": "x", "cron": "* * * * *", "catch_up": "some"}}, "'catch_up' must be"),
        ({"n": {"job": "x", "cron": "* * * * *", "every": 1}}, "unknown key(s) every"),
        ({"bad name!": {"job": "x", "cron": "* * * * *"}}, "a schedule name is"),
        ([], "must be a dict"),
    ],
)
def test_bad_schedules_settings_are_reported_with_their_key(settings, schedules, fragment):
    settings.WORKHORSE = {"SCHEDULES": schedules}

    found = problems(raw_settings())

    assert any(key.startswith("SCHEDULES") and fragment in message for key, message in found), found


def test_when_both_day_fields_are_restricted_a_day_matching_either_runs():
    # 2026-03-01 is a Sunday: "on the 15th or on Mondays".
    start = datetime(2026, 3, 1, tzinfo=UTC)
    end = datetime(2026, 3, 17, tzinfo=UTC)

    assert [s.day for s in slots_between("0 0 15 * MON", "UTC", start, end)] == [2, 9, 15, 16]


@pytest.mark.parametrize(
    ("cron", "first"),
    [
        ("0 0 L * *", datetime(2026, 3, 31, tzinfo=UTC)),  # the month's last day
        ("0 0 LW * *", datetime(2026, 3, 31, tzinfo=UTC)),  # its last weekday (a Tuesday)
        ("0 0 * * 5L", datetime(2026, 3, 27, tzinfo=UTC)),  # its last Friday
        ("0 0 * * FRI#2", datetime(2026, 3, 13, tzinfo=UTC)),  # the second Friday
        ("0 0 1 APR *", datetime(2026, 4, 1, tzinfo=UTC)),  # month names
    ],
)
def test_the_documented_cron_extensions_and_names_are_read(cron, first):
    assert cron_problem(cron) is None
    _, upcoming = plan(cron, "UTC", "latest", None, T0)

    assert upcoming == first
