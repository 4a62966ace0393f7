"""TRACE_LINKING = "auto": a parent for a prompt first attempt, a link otherwise."""

import pytest

from django_workhorse.worker.tracing import AUTO_PARENT_WINDOW, link_mode


@pytest.mark.parametrize(
    ("setting", "attempt", "waited", "mode"),
    [
        ("auto", 1, 0.5, "parent"),
        ("auto", 1, AUTO_PARENT_WINDOW + 1, "link"),
        ("auto", 2, 0.5, "link"),
        ("parent", 3, 3600, "parent"),
        ("link", 1, 0, "link"),
        ("off", 1, 0, "off"),
        ("none", 1, 0, "off"),
    ],
)
def test_link_mode(setting, attempt, waited, mode):
    assert link_mode(setting, attempt, waited) == mode
