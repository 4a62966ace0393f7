"""A bad value inside a nested setting is named as it is written in
settings.py (``WORKHORSE['QUEUES']['email']``), by ``manage.py check``, by
the worker's start (``ImproperlyConfigured``) and by retention alike."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_workhorse.core.conf import get_retention, get_settings

NESTED = [
    pytest.param(
        {"QUEUES": {"email": {"global_concurrency": 0}}},
        "WORKHORSE['QUEUES']['email'] 'global_concurrency' must be a whole number",
        id="queue-limit",
    ),
    pytest.param(
        {"QUEUES": {"email": {"concurrency": "2"}}},
        "WORKHORSE['QUEUES']['email']['concurrency'] must be a whole number",
        id="queue-concurrency",
    ),
    pytest.param(
        {"QUEUES": {"email": {"rate": 10}}},
        "WORKHORSE['QUEUES']['email'] 'rate' and 'period' go together",
        id="queue-rate-without-period",
    ),
    pytest.param(
        {"SCHEDULES": {"nightly": {"job": "demo.jobs.noop", "cron": "0 3 * *"}}},
        "WORKHORSE['SCHEDULES']['nightly'] cron '0 3 * *' is not valid",
        id="schedule-cron",
    ),
    pytest.param(
        {"RETENTION": {"HISTORY": -1}},
        "WORKHORSE['RETENTION']['HISTORY'] must be a positive duration",
        id="retention-history",
    ),
    pytest.param(
        {"RETENTION": {"INTERVAL": 1e-9}},
        "WORKHORSE['RETENTION']['INTERVAL'] must be at least 0.01 seconds (shorter, a worker "
        "would query the database without pause), or None to leave retention to workhorse_prune",
        id="retention-interval-a-nanosecond",
    ),
]


@pytest.mark.parametrize(("workhorse", "message"), NESTED)
def test_manage_py_check_names_a_nested_key_as_settings_py_spells_it(workhorse, message):
    with override_settings(WORKHORSE=workhorse):
        errors = [
            e for e in run_checks(tags=["workhorse"], databases=[]) if e.id == "workhorse.E001"
        ]
    assert [e.msg[: len(message)] for e in errors] == [message], errors


@pytest.mark.parametrize(("workhorse", "message"), NESTED[:4])
def test_the_worker_refuses_a_nested_value_naming_its_key_the_same_way(workhorse, message):
    with override_settings(WORKHORSE=workhorse), pytest.raises(ImproperlyConfigured) as raised:
        get_settings()
    assert str(raised.value).startswith(message)


def test_retention_refuses_a_bad_value_naming_its_key_the_same_way():
    with (
        override_settings(WORKHORSE={"RETENTION": {"BATCH_SIZE": 0}}),
        pytest.raises(ImproperlyConfigured) as raised,
    ):
        get_retention()
    assert str(raised.value).startswith("WORKHORSE['RETENTION']['BATCH_SIZE'] must be")


def test_a_workhorse_setting_that_is_not_a_dict_is_named_once():
    with override_settings(WORKHORSE=["CONCURRENCY", 4]):
        (error,) = [
            e
            for e in run_checks(tags=["workhorse"], databases=[])
            if e.id.startswith("workhorse.E")
        ]
    assert error.msg.startswith("WORKHORSE must be a dict")


@pytest.mark.parametrize(
    ("workhorse", "shown"),
    [
        pytest.param({"TRACE_LINKING": "sometimes"}, "'sometimes'", id="trace-linking"),
        pytest.param({"LOCK_DURATION": "30s"}, "'30s'", id="duration-of-another-type"),
        pytest.param({"POLL_INTERVAL": True}, "True", id="duration-bool"),
        pytest.param(
            {"LOCK_DURATION": 10, "LOCK_RENEW_INTERVAL": 12},
            "got 12 with LOCK_DURATION 10",
            id="renewal-not-shorter-than-the-lease",
        ),
        pytest.param(
            {"QUEUES": {"email": {"concurency": 5}}},
            "unknown key(s) 'concurency'",
            id="queue-entry-unknown-key",
        ),
        pytest.param({"QUEUES": {"email": 5}}, "got int 5", id="queue-entry-not-a-dict"),
        pytest.param({"QUEUES": ["email"]}, "got list ['email']", id="queues-not-a-dict"),
        pytest.param({"SCHEDULES": ["nightly"]}, "got list ['nightly']", id="schedules-not-a-dict"),
        pytest.param({"RETENTION": 7}, "got int 7", id="retention-not-a-dict"),
        pytest.param(
            {5: 1}, "WORKHORSE[5] is not a django-workhorse setting", id="key-not-a-string"
        ),
        # repr() of an int of more than 4,300 digits raises ValueError, which
        # crashed manage.py check instead of reporting the value.
        pytest.param(
            {"DEFAULT_MAX_ATTEMPTS": 10**5000},
            "an integer of about 5000 digits",
            id="int-too-long-to-print",
        ),
        pytest.param(
            {"QUEUES": {10**5000: {}}},
            "QUEUES'][an integer of about 5000 digits]",
            id="queue-key-too-long-to-print",
        ),
        pytest.param(
            {"SCHEDULES": {10**5000: {"job": "demo.jobs.noop", "cron": "0 3 * * *"}}},
            "SCHEDULES'][an integer of about 5000 digits]",
            id="schedule-key-too-long-to-print",
        ),
    ],
)
def test_manage_py_check_names_the_value_it_refuses(workhorse, shown):
    with override_settings(WORKHORSE=workhorse):
        (error,) = [
            e for e in run_checks(tags=["workhorse"], databases=[]) if e.id == "workhorse.E001"
        ]
    assert shown in error.msg, error.msg


@pytest.mark.parametrize(
    ("key", "advice"),
    [
        ("HISTORY", "use None to keep forever"),
        ("FINISHED_JOBS", "use None to keep forever"),
        ("INTERVAL", "use None to leave retention to workhorse_prune"),
    ],
)
def test_a_retention_window_too_long_to_cut_off_is_refused_as_too_long_not_as_negative(key, advice):
    with (
        override_settings(WORKHORSE={"RETENTION": {key: timedelta(days=10**6)}}),
        pytest.raises(ImproperlyConfigured) as raised,
    ):
        get_retention()
    message = str(raised.value)
    assert message.startswith(f"WORKHORSE['RETENTION']['{key}'] must be shorter than")
    assert "positive" not in message
    assert advice in message
