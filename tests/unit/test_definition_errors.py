"""A job defined or enqueued wrongly is refused in Python, naming what was
wrong and what to write instead; nothing reaches the database."""

from __future__ import annotations

import pytest

import django_workhorse as workhorse
from django_workhorse import InvalidJobOptionError, InvalidPayloadError
from django_workhorse.core.definitions import JobDefinition


def send(to: str) -> None: ...


def test_retry_on_that_is_not_exception_classes_is_refused_with_an_example():
    with pytest.raises(InvalidJobOptionError, match=r"retry_on must be an exception class") as exc:
        JobDefinition(send, name="tests.send", retry_on=5)  # type: ignore[arg-type]
    assert "got 5" in str(exc.value)


def test_retry_on_takes_one_exception_class_or_a_tuple_of_them():
    assert JobDefinition(send, name="tests.send", retry_on=KeyError).retry_on == (KeyError,)
    both = JobDefinition(send, name="tests.send", retry_on=(KeyError, OSError))
    assert both.retry_on == (KeyError, OSError)


def test_the_decorator_given_something_else_than_a_function_says_so():
    with pytest.raises(InvalidJobOptionError, match=r"registers a function, got 5 \(int\)"):
        workhorse.job(5)  # type: ignore[call-overload]


def test_the_decorator_given_a_name_in_place_of_a_function_shows_the_name_option():
    with pytest.raises(InvalidJobOptionError, match=r"write @workhorse.job\(name='emails.send'\)"):
        workhorse.job("emails.send")  # type: ignore[call-overload]


def test_a_bad_payload_among_many_is_named_by_its_position():
    payloads = [{"to": "a@example.com"}, {"to": "b@example.com"}, {"to": {1, 2}}]
    with pytest.raises(InvalidPayloadError, match=r"payloads\[2\] of 3: .*set"):
        JobDefinition(send, name="tests.send").enqueue_many(payloads)


def test_a_payload_that_does_not_fit_among_many_is_named_by_its_position():
    with pytest.raises(InvalidPayloadError, match=r"payloads\[1\] of 2: .*'to'"):
        JobDefinition(send, name="tests.send").enqueue_many([{"to": "x"}, {"too": "y"}])


def test_enqueue_many_given_one_payload_dict_says_to_pass_a_list():
    with pytest.raises(InvalidPayloadError, match=r"takes a list of payload dicts, got a dict"):
        JobDefinition(send, name="tests.send").enqueue_many({"to": "x"})  # type: ignore[arg-type]


def test_a_single_bad_payload_keeps_its_plain_message():
    with pytest.raises(InvalidPayloadError) as exc:
        JobDefinition(send, name="tests.send").enqueue(to={1})  # type: ignore[arg-type]
    assert "payloads[" not in str(exc.value)
