"""A job's options are declared once (``django_workhorse/job_options.py``):
the decorator, ``.options(...)``, the enqueue options and the Tasks backend
all take exactly the names declared there, so an option added in one place
but not the others fails here."""

from __future__ import annotations

import inspect
import re
from dataclasses import fields

import pytest

from django_workhorse import InvalidJobOptionError, job
from django_workhorse.core.definitions import EnqueueOptions, JobDefinition
from django_workhorse.core.job_options import (
    BACKEND_OPTIONS,
    DEFINITION_DEFAULTS,
    DEFINITION_OPTIONS,
    ENQUEUE_OPTIONS,
    TASK_DEFINITION_OPTIONS,
    TASK_ENQUEUE_OPTIONS,
    TASK_WORDS,
    SharedOptions,
)
from django_workhorse.tasks.backend import WorkhorseTask
from django_workhorse.tasks.backend_options import OPTION_KEYS, BackendOptions
from django_workhorse.tasks.compat import Task


def handler(a: int = 0) -> int:
    return a


def known_names(message: str) -> set[str]:
    """The names after "known:" in an unknown-option message."""
    return set(re.search(r"known: (.*)$", message).group(1).split(", "))


def test_the_decorator_accepts_exactly_the_declared_options():
    with pytest.raises(InvalidJobOptionError, match=r"unknown option\(s\) colour") as refused:
        job(colour="red")  # type: ignore[call-overload]
    assert known_names(str(refused.value)) == DEFINITION_OPTIONS
    assert DEFINITION_DEFAULTS.keys() == DEFINITION_OPTIONS


def test_options_accepts_exactly_the_declared_per_enqueue_options():
    definition = JobDefinition(handler, name="tests.declared_once", queue="tests")
    with pytest.raises(InvalidJobOptionError, match=r"unknown option\(s\) colour") as refused:
        definition.options(colour="red")  # type: ignore[call-arg]
    assert known_names(str(refused.value)) == ENQUEUE_OPTIONS


def test_the_enqueue_options_hold_one_field_per_per_enqueue_option():
    assert {f.name for f in fields(EnqueueOptions)} == ENQUEUE_OPTIONS


def test_a_definition_keeps_each_shared_option_it_is_given():
    given = {"queue": "declared", "priority": 7, "max_attempts": 4, "timeout": 9.0}
    given["max_stalled"] = 2
    assert given.keys() == SharedOptions.__optional_keys__
    definition = JobDefinition(handler, name="tests.declared_shared", **given)
    assert {key: getattr(definition._options, key) for key in given} == given


def test_a_django_task_takes_the_per_enqueue_options_django_has_no_word_for():
    django_using = set(inspect.signature(Task.using).parameters) - {"self"}
    ours = set(inspect.signature(WorkhorseTask.using).parameters) - {"self"}
    assert ours - django_using == TASK_ENQUEUE_OPTIONS
    assert {word for word in TASK_WORDS.values() if word is not None} <= django_using
    own_fields = {f.name for f in fields(WorkhorseTask)} - {f.name for f in fields(Task)}
    assert own_fields == TASK_ENQUEUE_OPTIONS | TASK_DEFINITION_OPTIONS
    assert TASK_DEFINITION_OPTIONS <= DEFINITION_OPTIONS - ENQUEUE_OPTIONS


def test_the_backend_options_each_give_the_default_of_a_decorator_option():
    assert tuple(BACKEND_OPTIONS) == OPTION_KEYS
    assert set(BACKEND_OPTIONS.values()) <= DEFINITION_OPTIONS
    assert {f.name for f in fields(BackendOptions)} == {key.lower() for key in BACKEND_OPTIONS}
