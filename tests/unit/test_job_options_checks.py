"""``manage.py check`` on ``WORKHORSE["JOB_OPTIONS"]``: a bad option or value
is workhorse.E001 naming its key, a key that names no job workhorse.W008."""

from __future__ import annotations

import pytest
from django.test import override_settings

from django_workhorse.operations.checks import check_job_options, check_settings

TASK = "searchlib.tasks.index_object"


def messages(job_options: object) -> list[tuple[str, str]]:
    with override_settings(WORKHORSE={"JOB_OPTIONS": job_options}):
        return [(m.id, m.msg) for m in [*check_settings(), *check_job_options()]]


def test_a_well_formed_setting_is_silent():
    given = {"max_attempts": 1, "no_retry_on": ["django.core.exceptions.ObjectDoesNotExist"]}
    assert messages({TASK: given, "searchlib.jobs.rebuild_index": {"queue": "search"}}) == []


def test_an_unknown_option_is_named_with_the_known_ones():
    assert messages({TASK: {"max_atempts": 1}}) == [
        (
            "workhorse.E001",
            f"WORKHORSE['JOB_OPTIONS']['{TASK}'] 'max_atempts' is not an option this setting "
            "gives; known: queue, priority, max_attempts, timeout, max_stalled, retry_on, "
            "no_retry_on",
        )
    ]


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("max_attempts", "1", "max_attempts must be a whole number"),
        ("priority", 500, "priority must be from -100 to 100"),
        ("timeout", "soon", "expected seconds"),
        ("queue", "", "queue:"),
        ("no_retry_on", 3, "must be an exception class or its dotted path"),
    ],
)
def test_a_value_of_the_wrong_type_is_named_with_its_key(option, value, says):
    (found,) = messages({TASK: {option: value}})
    assert found[0] == "workhorse.E001"
    assert found[1].startswith(f"WORKHORSE['JOB_OPTIONS']['{TASK}']['{option}'] ")
    assert says in found[1]


def test_an_exception_path_that_does_not_import_is_named():
    (found,) = messages({TASK: {"no_retry_on": ["searchlib.tasks.NoSuchError"]}})
    assert found[0] == "workhorse.E001"
    assert "['no_retry_on'] cannot import 'searchlib.tasks.NoSuchError'" in found[1]


def test_an_entry_that_is_not_a_dict_is_named():
    (found,) = messages({TASK: 1})
    assert found == (
        "workhorse.E001",
        f"WORKHORSE['JOB_OPTIONS']['{TASK}'] must be a dict of options such as "
        "{'max_attempts': 1}, got int 1",
    )


def test_a_key_that_names_no_job_is_a_warning_naming_it():
    (found,) = messages({"searchlib.tasks.index_objects": {"max_attempts": 1}})
    assert found == (
        "workhorse.W008",
        "WORKHORSE['JOB_OPTIONS']['searchlib.tasks.index_objects'] names no job: no "
        "registered job has that name or import path, and none is found by it",
    )
