"""Bad input to enqueue is refused before anything is written, with an error
that names the offending field."""

import math
from datetime import UTC, datetime

import pytest
from demo.jobs import add
from django.db import transaction

import django_workhorse as workhorse
from django_workhorse import InvalidJobOptionError, InvalidPayloadError, UnknownJobError

pytestmark = pytest.mark.django_db


@pytest.fixture
def nothing_written(db_rows):
    """Asserts, after the test body, that no workhorse table gained a row."""
    before = db_rows.counts()
    yield
    assert db_rows.counts() == before


@pytest.mark.usefixtures("nothing_written")
def test_an_unknown_job_name_raises_unknown_job_error_naming_it():
    with pytest.raises(UnknownJobError, match=r"no job named 'nope' is registered"):
        workhorse.enqueue("nope", a=1)


@pytest.mark.usefixtures("nothing_written")
def test_an_unknown_name_of_any_length_is_named_in_a_message_of_bounded_length():
    with pytest.raises(UnknownJobError) as raised:
        workhorse.enqueue("billing." + "x" * 10_000, a=1)

    assert "no job named 'billing.xxx" in str(raised.value)
    assert len(str(raised.value)) < 1_000


@pytest.mark.usefixtures("nothing_written")
def test_a_misspelt_name_is_answered_with_the_closest_registered_ones():
    with pytest.raises(UnknownJobError, match=r"registered; the closest: demo\.jobs\.add\b"):
        workhorse.enqueue("demo.jobs.ad", a=1)


@pytest.mark.usefixtures("nothing_written")
@pytest.mark.parametrize("name", [None, 5, ["demo.jobs.add"], add])
def test_a_job_name_that_is_not_a_string_raises_unknown_job_error_saying_so(name):
    """Bug: None and 5 raised a TypeError from the Tasks resolver, a list an
    'unhashable type' TypeError."""
    with pytest.raises(UnknownJobError, match=r"a job name is a string such as"):
        workhorse.enqueue(name, a=1, b=2)


@pytest.mark.usefixtures("nothing_written")
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(object(), r"payload\['a'\] is an object", id="object"),
        pytest.param(datetime(2024, 1, 1, tzinfo=UTC), r"payload\['a'\] is a datetime", id="dt"),
        pytest.param((1, 2), r"payload\['a'\] is a tuple", id="tuple"),
        pytest.param({1, 2}, r"payload\['a'\] is a set", id="set"),
        pytest.param(math.nan, r"payload\['a'\] is nan", id="nan"),
        pytest.param({1: "x"}, r"payload\['a'\] has the key 1", id="non-str-key"),
        pytest.param({"deep": [1, (2,)]}, r"payload\['a'\]\['deep'\]\[1\] is a tuple", id="nested"),
    ],
)
def test_a_non_json_payload_raises_invalid_payload_error_naming_the_field(value, expected):
    with pytest.raises(InvalidPayloadError, match=expected):
        add.enqueue(a=value, b=1)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("nul\x00byte", id="nul-character"),
        pytest.param("\ud800", id="lone-surrogate"),
        pytest.param({"key\x00": 1}, id="nul-in-a-key"),
    ],
)
def test_a_string_postgresql_jsonb_cannot_store_is_refused_naming_the_field(value, db_rows):
    """Bug: these pass the Python check and fail in PostgreSQL with a DataError,
    which also aborts the caller's transaction (hence the savepoint here)."""
    before = db_rows.counts()
    with pytest.raises(InvalidPayloadError, match=r"payload\['a'\]"), transaction.atomic():
        add.enqueue(a=value, b=1)
    assert db_rows.counts() == before


@pytest.mark.usefixtures("nothing_written")
def test_a_non_json_payload_is_refused_by_enqueue_by_name_too():
    with pytest.raises(InvalidPayloadError, match=r"payload\['b'\] is a set"):
        workhorse.enqueue("demo.jobs.add", a=1, b={2})


@pytest.mark.usefixtures("nothing_written")
@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        pytest.param({"a": 1}, r"missing a required argument: 'b'", id="missing"),
        pytest.param({"a": 1, "b": 2, "c": 3}, r"unexpected keyword argument 'c'", id="extra"),
    ],
)
def test_a_payload_that_does_not_fit_the_signature_is_refused(payload, expected):
    with pytest.raises(InvalidPayloadError, match=expected) as exc:
        add.enqueue(**payload)
    assert "demo.jobs.add" in str(exc.value)


@pytest.mark.usefixtures("nothing_written")
@pytest.mark.parametrize("max_attempts", [0, -1, 1001, 2.5, "3"])
def test_max_attempts_out_of_range_is_refused(max_attempts):
    with pytest.raises(InvalidJobOptionError, match="max_attempts"):
        add.options(max_attempts=max_attempts).enqueue(a=1, b=2)


@pytest.mark.usefixtures("nothing_written")
@pytest.mark.parametrize("priority", [101, -101, "high", True, 1.0])
def test_priority_out_of_range_is_refused(priority):
    with pytest.raises(InvalidJobOptionError, match="priority"):
        add.options(priority=priority).enqueue(a=1, b=2)


@pytest.mark.usefixtures("nothing_written")
def test_a_queue_name_too_long_for_a_notify_channel_is_refused():
    with pytest.raises(InvalidJobOptionError, match=r"queue: .* 54 characters.*NOTIFY"):
        add.options(queue="q" * 54).enqueue(a=1, b=2)


def test_a_queue_name_of_53_characters_is_the_longest_accepted(db_rows):
    handle = add.options(queue="q" * 53).enqueue(a=1, b=2)
    assert db_rows.runtime(handle.id)["queue"] == "q" * 53


@pytest.mark.usefixtures("nothing_written")
@pytest.mark.parametrize("queue", ["", "has space", "semi;colon", "-leading-dash", ".dot", "é", 7])
def test_a_queue_name_with_invalid_characters_is_refused(queue):
    with pytest.raises(InvalidJobOptionError, match=r"^queue: "):
        add.options(queue=queue).enqueue(a=1, b=2)


@pytest.mark.usefixtures("nothing_written")
@pytest.mark.parametrize(
    ("options", "field"),
    [
        pytest.param({"delay": -1}, "delay", id="negative-delay"),
        pytest.param({"timeout": 0}, "timeout", id="zero-timeout"),
        pytest.param({"run_at": datetime(2030, 1, 1)}, "run_at", id="naive-run-at"),
        pytest.param({"idempotency_key": ""}, "idempotency_key", id="empty-key"),
        pytest.param({"idempotency_key": "k" * 256}, "idempotency_key", id="long-key"),
        pytest.param({"colour": "red"}, "colour", id="unknown-option"),
    ],
)
def test_other_bad_options_are_refused_naming_the_option(options, field):
    with pytest.raises(InvalidJobOptionError, match=field):
        add.options(**options).enqueue(a=1, b=2)


@pytest.mark.usefixtures("nothing_written")
def test_enqueue_many_with_one_bad_payload_among_many_writes_nothing():
    payloads = [{"a": i, "b": i} for i in range(50)]
    payloads[37] = {"a": 37, "b": {37}}
    with pytest.raises(InvalidPayloadError, match=r"payload\['b'\] is a set"):
        add.enqueue_many(payloads)


@pytest.mark.usefixtures("nothing_written")
def test_enqueue_many_with_one_payload_missing_an_argument_writes_nothing():
    with pytest.raises(InvalidPayloadError, match="'b'"):
        add.enqueue_many([{"a": 1, "b": 1}, {"a": 2}])


@pytest.mark.usefixtures("nothing_written")
@pytest.mark.parametrize("payloads", [None, 5])
def test_enqueue_many_of_something_that_is_not_a_list_is_refused_naming_it(payloads):
    """Bug: a TypeError ("'NoneType' object is not iterable") from list()."""
    with pytest.raises(InvalidPayloadError, match=r"takes a list of payload dicts, got "):
        add.enqueue_many(payloads)


@pytest.mark.usefixtures("nothing_written")
def test_enqueue_many_of_nothing_writes_nothing():
    assert add.enqueue_many([]) == []
