"""Settings of schedules, logs, tracing and metrics: bad values are named by key."""

import pytest

from django_workhorse.core.conf import get_settings, problems, raw_settings


@pytest.mark.parametrize(
    ("workhorse", "key", "fragment"),
    [
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT", "must be 'text' or 'json'"),
        ({"HANDLER_SPAN_NAME": "{job}.run"}, "HANDLER_SPAN_NAME", "only {name} and {queue}"),
        ({"HANDLER_SPAN_NAME": ""}, "HANDLER_SPAN_NAME", "non-empty string"),
        ({"HANDLER_SPAN_NAME": 3}, "HANDLER_SPAN_NAME", "non-empty string"),
        ({"HANDLER_SPAN_NAME": "{name.x}"}, "HANDLER_SPAN_NAME", "only {name} and {queue}"),
        ({"HANDLER_SPAN_NAME": "{name[x]}"}, "HANDLER_SPAN_NAME", "only {name} and {queue}"),
        ({"HANDLER_SPAN_NAME": "{name:d}"}, "HANDLER_SPAN_NAME", "only {name} and {queue}"),
        ({"HANDLER_SPAN_NAME": "{0}"}, "HANDLER_SPAN_NAME", "only {name} and {queue}"),
        ({"HANDLER_SPAN_NAME": "{name"}, "HANDLER_SPAN_NAME", "only {name} and {queue}"),
        (
            {"TRACE_LINKING": "child"},
            "TRACE_LINKING",
            "'auto', 'parent', 'link', 'off' (or its alias 'none')",
        ),
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


def test_a_span_name_with_an_attribute_lookup_is_reported_by_the_check(settings):
    from django.core.checks import run_checks

    settings.WORKHORSE = {"HANDLER_SPAN_NAME": "{name.x}"}

    messages = [m for m in run_checks() if m.id == "workhorse.E001"]

    assert any("HANDLER_SPAN_NAME" in m.msg and "{name}.run" in m.msg for m in messages), messages


@pytest.mark.parametrize("span_name", ["{name:>999999999999}", "{name:>{queue}}", "{queue!r}"])
def test_a_span_name_with_a_format_spec_or_conversion_is_named_not_formatted(settings, span_name):
    # A width of a trillion would be a MemoryError in manage.py check (and a
    # huge name on every span) if the check formatted the name to try it.
    settings.WORKHORSE = {"HANDLER_SPAN_NAME": span_name}

    found = problems(raw_settings())

    assert [key for key, _ in found] == ["HANDLER_SPAN_NAME"]
    assert "only {name} and {queue}" in found[0][1]
