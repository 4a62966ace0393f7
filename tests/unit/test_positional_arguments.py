"""``enqueue`` takes the handler's arguments as a call would, and stores them
by name: a job's payload is always the handler's keyword arguments."""

from __future__ import annotations

import pytest

from django_workhorse.core.definitions import JobDefinition
from django_workhorse.exceptions import InvalidPayloadError


def send(invoice_id: int, copies: int = 1, *, urgent: bool = False) -> None:
    return None


def spread(*numbers: int) -> None:
    return None


def only_positional(invoice_id: int, /) -> None:
    return None


def payload(func, *args, **kwargs):
    return JobDefinition(func, name=f"tests.{func.__name__}").payload_of(args, kwargs)


def test_positional_arguments_are_stored_under_their_parameters_names():
    assert payload(send, 7, 2, urgent=True) == {"invoice_id": 7, "copies": 2, "urgent": True}


def test_keyword_arguments_are_stored_as_they_are():
    assert payload(send, invoice_id=7) == {"invoice_id": 7}


def test_more_positional_arguments_than_named_parameters_are_refused():
    with pytest.raises(InvalidPayloadError, match=r"takes 2 argument\(s\) by position but 3"):
        payload(send, 7, 2, True)


def test_an_argument_given_by_position_and_by_keyword_is_refused():
    with pytest.raises(InvalidPayloadError, match="got invoice_id both by position and by keyword"):
        payload(send, 7, invoice_id=8)


@pytest.mark.parametrize("func", [spread, only_positional], ids=["*args", "positional-only"])
def test_a_positional_argument_with_no_name_to_be_stored_under_is_refused(func):
    with pytest.raises(InvalidPayloadError, match="pass the others by keyword"):
        payload(func, 1)
