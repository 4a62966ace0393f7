"""``manage.py check`` reports a bad Tasks backend entry under a stable id
naming its key (docs/django-tasks.md): a bad queue name or a ``QUEUES``
that is not a list is workhorse.E101, each bad option workhorse.E102."""

from __future__ import annotations

import pytest
from django.core.checks import run_checks
from django.test import override_settings

BACKEND = "django_workhorse.tasks.WorkhorseBackend"


def backend_messages(**entry) -> list[tuple[str, str]]:
    with override_settings(TASKS={"default": {"BACKEND": BACKEND, **entry}}):
        return [(m.id, m.msg) for m in run_checks() if m.id.startswith("workhorse.E1")]


@pytest.mark.parametrize(
    ("option", "value", "problem"),
    [
        ("MAX_ATTEMPTS", 0, "from 1 to 1000, got 0"),
        ("MAX_STALLED", -1, "from 0 to 1000, got -1"),
        ("TIMEOUT", 0, "at least 0.000001 seconds"),
        ("BACKOFF", {"kind": "fixed"}, "is not a valid fixed backoff"),
        ("DATABASE", "nowhere", "'nowhere' is not an alias of settings.DATABASES"),
        ("DATABASE", ["default"], "['default'] is not an alias of settings.DATABASES"),
        ("BACKOFF", {"kind": ["fixed"]}, "'kind' must be 'exponential' or 'fixed', got ['fixed']"),
        ("RETRIES", 3, "is not an option; known: DATABASE, MAX_ATTEMPTS"),
    ],
)
def test_each_bad_option_is_E102_naming_its_key(option, value, problem):
    ((check_id, message),) = backend_messages(QUEUES=["default"], OPTIONS={option: value})
    assert check_id == "workhorse.E102"
    assert message.startswith(f"TASKS['default']['OPTIONS']['{option}'] ")
    assert problem in message


def test_a_bad_queue_name_is_E101_naming_it():
    ((check_id, message),) = backend_messages(QUEUES=["default", "bad queue!"])
    assert check_id == "workhorse.E101"
    assert message.startswith("TASKS['default']['QUEUES'] holds 'bad queue!': ")


def test_queues_given_as_one_string_is_E101_not_a_set_of_letters():
    ((check_id, message),) = backend_messages(QUEUES="default")
    assert check_id == "workhorse.E101"
    assert message == (
        "TASKS['default']['QUEUES'] must be a list of queue names such as "
        "['default', 'emails'], got str 'default'"
    )


@pytest.mark.parametrize(("queues", "shown"), [(None, "NoneType None"), (5, "int 5")])
def test_queues_that_are_not_a_collection_are_E101_not_a_crash(queues, shown):
    ((check_id, message),) = backend_messages(QUEUES=queues)
    assert check_id == "workhorse.E101"
    assert message == (
        "TASKS['default']['QUEUES'] must be a list of queue names such as "
        f"['default', 'emails'], got {shown}"
    )


@pytest.mark.parametrize("queues", [["default", "emails"], ("default",), []])
def test_lists_of_good_queue_names_pass(queues):
    assert backend_messages(QUEUES=queues, OPTIONS={"MAX_ATTEMPTS": 3}) == []
