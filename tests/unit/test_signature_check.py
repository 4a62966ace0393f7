"""A payload is checked against the handler's signature before it runs.

Plain keyword parameters are checked by set inclusion; ``*args``,
``**kwargs`` and positional-only parameters are left to ``Signature.bind``.
Either way a payload that does not fit is refused with the reason.
"""

from __future__ import annotations

import pytest

from django_workhorse import InvalidPayloadError
from django_workhorse.core.definitions import JobDefinition


def plain(a: int, b: int = 2, *, c: int = 3) -> None: ...


def open_ended(a: int, **rest: int) -> None: ...


def positional_only(a: int, /, b: int = 2) -> None: ...


def definition(func) -> JobDefinition:
    return JobDefinition(func=func, name=f"tests.{func.__name__}", queue="tests")


@pytest.mark.parametrize("payload", [{"a": 1}, {"a": 1, "b": 2}, {"a": 1, "c": 3}])
def test_a_payload_that_fits_plain_parameters_passes(payload):
    definition(plain).check_payload(payload)


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ({}, "missing a required argument: 'a'"),
        ({"b": 2}, "missing a required argument: 'a'"),
        ({"a": 1, "d": 4}, "unexpected keyword argument 'd'"),
    ],
)
def test_a_payload_that_does_not_fit_plain_parameters_is_refused_with_the_reason(payload, reason):
    with pytest.raises(InvalidPayloadError, match=reason) as exc:
        definition(plain).check_payload(payload)
    assert "tests.plain" in str(exc.value)


def test_extra_keys_fit_a_handler_that_takes_kwargs():
    definition(open_ended).check_payload({"a": 1, "anything": 2})
    with pytest.raises(InvalidPayloadError, match="missing a required argument: 'a'"):
        definition(open_ended).check_payload({"anything": 2})


def test_a_positional_only_parameter_cannot_be_given_by_keyword():
    with pytest.raises(InvalidPayloadError, match="positional"):
        definition(positional_only).check_payload({"a": 1})


def greet(user_id: int) -> None: ...


def test_a_misspelt_argument_is_named_with_the_parameter_it_may_have_meant():
    with pytest.raises(InvalidPayloadError) as exc:
        definition(greet).check_payload({"uid": 1})
    message = str(exc.value)
    assert "missing a required argument: 'user_id'" in message
    assert "no argument 'uid' (did you mean 'user_id'?)" in message
