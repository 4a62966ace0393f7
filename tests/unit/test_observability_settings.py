"""Settings of schedules, logs, tracing and metrics: bad values are named by key."""

import pytest

from django_workhorse.conf import get_settings, problems, raw_settings


@pytest.mark.parametrize(
    ("workhorse", "key", "fragment"),
    [
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT", "must be 'text' or 'json'"),
        ({"HANDLER_SPAN_NAME": "{job}.run"}, "HANDLER_SPAN_NAME", "only {name} and {queue}"),
        ({"HANDLER_SPAN_NAME": ""}, "HANDLER_SPAN_NAME", "non-empty string"),
        ({"HANDLER_SPAN_NAME": 3}, "HANDLER_SPAN_NAME", "non-empty string"),
        ({"TRACE_LINKING": "child"}, "TRACE_LINKING", "'auto', 'parent', 'link', 'off'"),
    ],
)
def test_a_bad_observability_setting_is_named(settings, workhorse, key, fragment):
    settings.WORKHORSE = workhorse

    assert any(k == key and fragment in message for k, message in problems(raw_settings()))


@pytest.mark.parametrize("linking", ["auto", "parent", "link", "off", "none"])
def test_every_documented_trace_linking_is_accepted(settings, linking):
    settings.WORKHORSE = {"TRACE_LINKING": linking}

    assert get_settings().trace_linking == linking


def test_schedules_and_log_format_are_read(settings):
    schedules = {"n": {"job": "jobtests.jobs.record", "cron": "0 3 * * *"}}
    settings.WORKHORSE = {"SCHEDULES": schedules, "LOG_FORMAT": "json"}

    read = get_settings()

    assert (read.schedules, read.log_format) == (schedules, "json")
