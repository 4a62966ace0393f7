"""Payloads and results are JSON that round-trips; anything else is refused
with the path of the offending value. Nothing is ever pickled."""

import json
import math
from datetime import UTC, date, datetime
from decimal import Decimal
from uuid import uuid4

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_workhorse import InvalidPayloadError
from django_workhorse.core.limits import PAYLOAD_MAX_BYTES
from django_workhorse.core.payloads import (
    encode_one_payload_array,
    encode_payload,
    encode_payload_array,
    encode_result,
)

# jsonb stores any text but NUL and lone surrogates (refused, see the tests below).
JSONB_TEXT = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15)
    | st.text(JSONB_TEXT),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(JSONB_TEXT, max_size=8), children, max_size=4)
    ),
    max_leaves=10,
)


def test_nested_json_is_encoded_as_is():
    payload = {"user": {"id": 1, "tags": ["a", "b"], "score": 1.5, "admin": False, "boss": None}}
    assert json.loads(encode_payload("demo.jobs.add", payload)) == payload


@settings(
    max_examples=50, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.dictionaries(st.text(JSONB_TEXT, max_size=8), json_values, max_size=5))
def test_any_json_object_round_trips(payload):
    assert json.loads(encode_payload("demo.jobs.add", payload)) == payload


NOT_JSON = [
    pytest.param(object(), "object", id="object"),
    pytest.param(datetime(2024, 1, 1, tzinfo=UTC), "isoformat()", id="datetime"),
    pytest.param(date(2024, 1, 1), "isoformat()", id="date"),
    pytest.param((1, 2), "pass a list", id="tuple"),
    pytest.param({1, 2}, "pass a sorted list", id="set"),
    pytest.param(Decimal("1.5"), "str(value)", id="decimal"),
    pytest.param(uuid4(), "str(value)", id="uuid"),
    pytest.param(math.nan, "nan", id="nan"),
    pytest.param(math.inf, "inf", id="infinity"),
    pytest.param(b"bytes", "bytes", id="bytes"),
    pytest.param({1: "one"}, "the key 1", id="non-string-key"),
]


@pytest.mark.parametrize(("value", "hint"), NOT_JSON)
def test_a_non_json_value_is_refused_with_its_path(value, hint):
    with pytest.raises(InvalidPayloadError) as exc:
        encode_payload("demo.jobs.add", {"value": value})
    assert "payload['value']" in str(exc.value)
    assert hint in str(exc.value)
    assert "'demo.jobs.add'" in str(exc.value)


class User:
    """A model instance passed where its id belongs."""


class Undefined:
    pass


@pytest.mark.parametrize(
    ("value", "said"),
    [
        pytest.param(User(), "is a User, which", id="a-User"),
        pytest.param(uuid4(), "is a UUID, which", id="a-UUID"),
        pytest.param(Undefined(), "is an Undefined, which", id="an-Undefined"),
        pytest.param(object(), "is an object, which", id="an-object"),
    ],
)
def test_the_refusal_names_the_type_with_the_article_it_is_said_with(value, said):
    with pytest.raises(InvalidPayloadError) as exc:
        encode_payload("demo.jobs.add", {"user": value})

    assert f"payload['user'] {said} is not JSON" in str(exc.value)


def test_the_path_reaches_into_nested_values():
    with pytest.raises(InvalidPayloadError, match=r"payload\['a'\]\['b'\]\[1\] is a set"):
        encode_payload("demo.jobs.add", {"a": {"b": [1, {2}]}})


def test_a_payload_must_be_a_mapping():
    with pytest.raises(InvalidPayloadError, match="must be a dict of keyword arguments"):
        encode_payload("demo.jobs.add", [1, 2])


def test_a_result_may_be_any_json_value():
    assert encode_result([1, {"a": None}]) == '[1,{"a":null}]'
    assert encode_result(None) == "null"


@pytest.mark.parametrize(("value", "hint"), NOT_JSON)
def test_a_non_json_result_is_refused(value, hint):
    with pytest.raises(InvalidPayloadError, match="return JSON-friendly data"):
        encode_result({"value": value})


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("nul\x00byte", id="nul-character"),
        pytest.param("\ud800", id="lone-surrogate"),
        pytest.param({"key\x00": 1}, id="nul-in-a-key"),
    ],
)
def test_a_string_postgresql_jsonb_cannot_store_is_refused(value):
    """Bug: JSON allows these, PostgreSQL's jsonb does not (a DataError at
    enqueue, or a failed succeed batch for a result)."""
    with pytest.raises(InvalidPayloadError, match=r"payload\['value'\]"):
        encode_payload("demo.jobs.add", {"value": value})
    with pytest.raises(InvalidPayloadError):
        encode_result({"value": value})


@settings(
    max_examples=50, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(st.dictionaries(st.text(JSONB_TEXT, max_size=8), json_values, max_size=5))
def test_one_payload_is_sent_as_a_list_of_it_would_be(payload):
    one = encode_one_payload_array("demo.jobs.add", payload)

    assert one == encode_payload_array("demo.jobs.add", [payload])


@pytest.mark.parametrize("extra", [0, 1], ids=["at-the-limit", "one-byte-over"])
def test_one_payload_meets_the_size_limit_of_a_list_of_it(extra):
    payload = {"a": "x" * (PAYLOAD_MAX_BYTES - len('{"a":""}') + extra)}

    def outcome(encode):
        try:
            return encode()
        except InvalidPayloadError as exc:
            return str(exc)

    one = outcome(lambda: encode_one_payload_array("demo.jobs.add", payload))
    assert one == outcome(lambda: encode_payload_array("demo.jobs.add", [payload]))
    assert ("limit of" in one) == bool(extra)
