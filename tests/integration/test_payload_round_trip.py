"""A payload that enqueue accepts comes back from the store exactly as passed.

(NUL characters and lone surrogates, which jsonb refuses, are pinned in
test_enqueue_validation.py.)
"""

import pytest
from django.db import transaction
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import django_workhorse as workhorse
from django_workhorse import Admin, InvalidPayloadError

pytestmark = pytest.mark.django_db


@workhorse.job(name="tests.echo")
def echo(**payload):
    """Takes any keyword arguments: the payload is whatever the test passes."""
    return payload


# jsonb stores any text but NUL and lone surrogates (refused, see the tests below).
JSONB_TEXT = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15)
    | st.text(JSONB_TEXT, max_size=10),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(JSONB_TEXT, max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    # Shrinking through database round trips takes a minute; the explicit
    # tests below pin each failure found so far.
    phases=[Phase.explicit, Phase.generate],
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(payload=st.dictionaries(st.text(JSONB_TEXT, max_size=5), json_values, max_size=4))
def test_a_payload_enqueue_accepts_comes_back_equal_from_the_store(payload, db):
    with transaction.atomic():
        try:
            handle = echo.enqueue(**payload)
        except InvalidPayloadError:
            return
        assert Admin().get_job(handle.id).payload == payload


@pytest.mark.parametrize("value", [1.2345678901234567e20, 6.932918766941989e16, -3.0e17])
def test_a_float_jsonb_would_return_as_an_int_is_refused_naming_the_field(value):
    """jsonb prints a float of 1e16 or more without a decimal point, so it would
    come back as an int, often of another value (123456789012345670000 for
    1.2345678901234567e20): enqueue refuses it instead of changing it."""
    with pytest.raises(InvalidPayloadError, match=r"payload\['x'\] is the float .* pass an int"):
        echo.enqueue(x=value)


@pytest.mark.django_db
def test_a_payload_key_named_self_is_enqueued_like_any_other():
    handle = echo.enqueue(self=1)

    assert Admin().get_job(handle.id).payload == {"self": 1}
