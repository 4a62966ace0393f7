"""The WORKHORSE settings dict is validated key by key, lazily, with messages
that name the key; ``manage.py check`` reports each problem as workhorse.E001."""

from datetime import timedelta

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_workhorse.core.conf import DEFAULTS, get_settings, problems

BAD_VALUES = [
    pytest.param({"CONCURRENCY": 0}, "CONCURRENCY", id="concurrency-zero"),
    pytest.param({"CONCURRENCY": "4"}, "CONCURRENCY", id="concurrency-string"),
    pytest.param({"POLL_INTERVAL": -1}, "POLL_INTERVAL", id="poll-interval-negative"),
    pytest.param({"LOCK_DURATION": "30s"}, "LOCK_DURATION", id="lock-duration-string"),
    pytest.param({"CONCURENCY": 4}, "CONCURENCY", id="unknown-key"),
    pytest.param({"QUEUES": {"bad queue!": {}}}, "QUEUES['bad queue!']", id="queue-bad-name"),
    pytest.param({"QUEUES": {"q" * 54: {}}}, f"QUEUES[{'q' * 54!r}]", id="queue-name-too-long"),
    pytest.param(
        {"QUEUES": {"email": {"concurrency": 0}}},
        "QUEUES['email']['concurrency']",
        id="queue-concurrency-zero",
    ),
    pytest.param(
        {"LOCK_DURATION": 10, "LOCK_RENEW_INTERVAL": 10},
        "LOCK_RENEW_INTERVAL",
        id="renew-not-shorter-than-lock",
    ),
    pytest.param(
        {"LOCK_DURATION": 10, "LOCK_RENEW_INTERVAL": timedelta(seconds=20)},
        "LOCK_RENEW_INTERVAL",
        id="renew-longer-than-lock",
    ),
    pytest.param(
        {"QUEUES": {"email": {"concurrency": 10_001}}},
        "QUEUES['email']['concurrency']",
        id="queue-concurrency-beyond-the-slots-of-a-process",
    ),
    pytest.param({"DATABASE": "nowhere"}, "DATABASE", id="database-not-an-alias"),
    pytest.param({"DEFAULT_QUEUE": "-dash"}, "DEFAULT_QUEUE", id="default-queue-bad-name"),
    pytest.param({"TRACE_LINKING": "sometimes"}, "TRACE_LINKING", id="trace-linking-unknown"),
    pytest.param({"ON_JOB_FAILURE": ""}, "ON_JOB_FAILURE", id="failure-hook-empty"),
    pytest.param({"ON_JOB_CANCELED": 42}, "ON_JOB_CANCELED", id="cancel-hook-not-a-path"),
    pytest.param({"VACUUM_INTERVAL": 0}, "VACUUM_INTERVAL", id="vacuum-interval-zero"),
    pytest.param({"VACUUM_INTERVAL": "30s"}, "VACUUM_INTERVAL", id="vacuum-interval-string"),
    pytest.param({"VACUUM_INTERVAL": False}, "VACUUM_INTERVAL", id="vacuum-interval-false"),
    pytest.param({"POLL_INTERVAL": 1e-9}, "POLL_INTERVAL", id="poll-interval-a-nanosecond"),
    pytest.param({"WORKER_ID": "w" * 201}, "WORKER_ID", id="worker-id-prefix-too-long"),
    pytest.param({"LOCK_DURATION": 0.015}, "LOCK_DURATION", id="lock-duration-15-ms"),
    pytest.param(
        {"STALLED_INTERVAL": timedelta(microseconds=1)}, "STALLED_INTERVAL", id="stalled-1-us"
    ),
    pytest.param(
        {"QUEUE_METRICS_INTERVAL": 0.001}, "QUEUE_METRICS_INTERVAL", id="depth-sampling-1-ms"
    ),
]


def test_the_defaults_have_no_problems():
    assert problems(dict(DEFAULTS)) == []


def test_durations_accept_seconds_and_timedeltas():
    raw = {**DEFAULTS, "LOCK_DURATION": timedelta(minutes=1), "LOCK_RENEW_INTERVAL": 20}
    assert problems(raw) == []


@pytest.mark.parametrize(("overrides", "key"), BAD_VALUES)
def test_a_bad_value_is_reported_under_its_key(overrides, key):
    found = problems({**DEFAULTS, **overrides})
    assert [k for k, _ in found] == [key], found


@pytest.mark.parametrize(("overrides", "key"), BAD_VALUES)
def test_manage_py_check_reports_a_bad_value_as_E001_naming_the_key(overrides, key):
    with override_settings(WORKHORSE=overrides):
        errors = [
            e for e in run_checks(tags=["workhorse"], databases=[]) if e.id == "workhorse.E001"
        ]
    assert len(errors) == 1, errors
    top, _, nested = key.partition("[")
    assert errors[0].msg.startswith(f"WORKHORSE[{top!r}]{'[' if nested else ''}{nested} ")


def test_manage_py_check_is_silent_about_good_settings():
    with override_settings(WORKHORSE={"CONCURRENCY": 8, "QUEUES": {"email": {"concurrency": 2}}}):
        assert run_checks(tags=["workhorse"], databases=[]) == []


def test_a_workhorse_setting_that_is_not_a_dict_is_reported():
    with override_settings(WORKHORSE=["CONCURRENCY", 4]):
        assert [k for k, _ in problems()] == ["WORKHORSE"]


@pytest.mark.parametrize("value", [[], "", 0, ()])
def test_a_workhorse_setting_that_is_empty_but_not_a_dict_is_reported(value):
    """Bug: any false value was read as "no settings", so a WORKHORSE = []
    passed ``manage.py check``."""
    with override_settings(WORKHORSE=value):
        assert [k for k, _ in problems()] == ["WORKHORSE"]


def test_every_problem_is_reported_not_only_the_first():
    keys = {k for k, _ in problems({**DEFAULTS, "CONCURRENCY": 0, "POLL_INTERVAL": -1})}
    assert keys == {"CONCURRENCY", "POLL_INTERVAL"}


def test_settings_are_read_when_used_so_override_settings_works():
    assert get_settings().concurrency == DEFAULTS["CONCURRENCY"]
    with override_settings(WORKHORSE={"CONCURRENCY": 7, "LOCK_DURATION": timedelta(seconds=40)}):
        current = get_settings()
        assert current.concurrency == 7
        assert current.lock_duration == 40.0
        assert current.lock_renew_interval == 20.0  # half the lock by default


def test_reading_bad_settings_raises_improperly_configured_naming_the_key():
    with (
        override_settings(WORKHORSE={"POLL_INTERVAL": -1}),
        pytest.raises(ImproperlyConfigured, match=r"WORKHORSE\['POLL_INTERVAL'\]"),
    ):
        get_settings()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        pytest.param("DEFAULT_MAX_ATTEMPTS", 1001, id="max-attempts-above-1000"),
        pytest.param("MAX_STALLED_COUNT", 1001, id="max-stalled-above-1000"),
    ],
)
def test_a_default_beyond_what_the_database_accepts_is_reported(key, value):
    """Bug: only the lower bound is checked, so ``manage.py check`` passes and
    then every @workhorse.job (max_attempts) or every enqueue (max_stalled, a
    CHECK violation in PostgreSQL) fails."""
    assert [k for k, _ in problems({**DEFAULTS, key: value})] == [key]


def test_vacuum_interval_defaults_to_30_seconds_takes_a_timedelta_and_none_turns_it_off():
    assert get_settings().vacuum_interval == 30.0
    with override_settings(WORKHORSE={"VACUUM_INTERVAL": timedelta(minutes=2)}):
        assert get_settings().vacuum_interval == 120.0
    with override_settings(WORKHORSE={"VACUUM_INTERVAL": None}):
        assert get_settings().vacuum_interval is None


@pytest.mark.parametrize("value", [0, -5, "30s", False, float("nan")])
def test_a_bad_vacuum_interval_says_that_none_turns_the_vacuum_off(value):
    with override_settings(WORKHORSE={"VACUUM_INTERVAL": value}):
        (error,) = [
            e for e in run_checks(tags=["workhorse"], databases=[]) if e.id == "workhorse.E001"
        ]
    assert error.msg.startswith("WORKHORSE['VACUUM_INTERVAL'] ")
    assert "or None to turn it off" in error.msg


@pytest.mark.parametrize(
    "key",
    [
        "LOCK_RENEW_INTERVAL",
        "STALLED_INTERVAL",
        "POLL_INTERVAL",
        "SCHEDULE_SWEEP_INTERVAL",
        "QUEUE_METRICS_INTERVAL",
        "VACUUM_INTERVAL",
    ],
)
def test_a_loop_period_under_ten_milliseconds_is_refused_saying_why(key):
    found = dict(problems({**DEFAULTS, key: 0.005}))
    assert found[key] == (
        "must be at least 0.01 seconds (shorter, a worker would query the database without "
        "pause)"
        + (
            ", or None to turn it off"
            if key in ("QUEUE_METRICS_INTERVAL", "VACUUM_INTERVAL")
            else ""
        )
        + ", got 0.005"
    )
    assert problems({**DEFAULTS, key: 0.01}) == []


def test_a_lease_is_at_least_twice_the_shortest_heartbeat():
    assert dict(problems({**DEFAULTS, "LOCK_DURATION": 0.019}))["LOCK_DURATION"].startswith(
        "must be at least 0.02 seconds"
    )
    assert problems({**DEFAULTS, "LOCK_DURATION": 0.02}) == []
