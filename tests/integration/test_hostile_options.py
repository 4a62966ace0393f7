"""Values the database would refuse are refused in Python first.

Each case here used to pass the Python checks and then fail in PostgreSQL
with a raw IntegrityError or DataError that also aborted the caller's
transaction (or, for payloads, raised a bare ValueError or RecursionError).
Now each is a WorkhorseError naming the option, raised before any SQL: the
caller's transaction goes on, and nothing was written.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest
from demo.jobs import add

import django_workhorse as workhorse
from django_workhorse import InvalidJobOptionError, InvalidPayloadError, WorkhorseError
from django_workhorse.core.definitions import JobDefinition
from django_workhorse.core.limits import PAYLOAD_MAX_BYTES, PAYLOAD_MAX_DEPTH
from django_workhorse.db import store

pytestmark = pytest.mark.django_db


@pytest.fixture
def still_usable(db_rows):
    """After the test body: the test's transaction still runs queries (no SQL
    error aborted it) and no workhorse table gained a row."""
    before = db_rows.counts()
    yield
    assert db_rows.counts() == before


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


OPTIONS = [
    pytest.param({"queue": "email\n"}, "queue", id="queue-trailing-newline"),
    pytest.param({"delay": math.nan}, "delay", id="delay-nan"),
    pytest.param({"delay": math.inf}, "delay", id="delay-infinity"),
    pytest.param({"delay": -math.inf}, "delay", id="delay-minus-infinity"),
    pytest.param({"delay": 1e300}, "delay", id="delay-beyond-timestamptz"),
    pytest.param({"delay": timedelta.max}, "delay", id="delay-timedelta-max"),
    pytest.param({"delay": 10**400}, "delay", id="delay-int-beyond-a-float"),
    pytest.param({"timeout": math.nan}, "timeout", id="timeout-nan"),
    pytest.param({"timeout": math.inf}, "timeout", id="timeout-infinity"),
    pytest.param({"timeout": 1e300}, "timeout", id="timeout-beyond-an-interval"),
    pytest.param({"idempotency_key": "k\x00"}, "idempotency_key", id="key-with-nul"),
    pytest.param({"idempotency_key": "k\ud800"}, "idempotency_key", id="key-lone-surrogate"),
    pytest.param({"idempotency_key": 5}, "idempotency_key", id="key-not-a-string"),
    pytest.param(
        {"run_at": datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5)))},
        "run_at",
        id="run-at-before-year-1-in-utc",
    ),
    pytest.param(
        {"run_at": datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5)))},
        "run_at",
        id="run-at-after-year-9999-in-utc",
    ),
    pytest.param({"run_at": "2030-01-01"}, "run_at", id="run-at-a-string"),
    pytest.param({"max_stalled": 1001}, "max_stalled", id="max-stalled-too-high"),
    pytest.param({"dependency_policy": 10**5000}, "dependency_policy", id="policy-int-too-long"),
]


@pytest.mark.usefixtures("still_usable")
@pytest.mark.parametrize(("options", "field"), OPTIONS)
def test_an_option_the_database_would_refuse_is_refused_before_any_sql(options, field):
    with pytest.raises(InvalidJobOptionError, match=field):
        add.options(**options).enqueue(a=1, b=2)


@pytest.mark.usefixtures("still_usable")
@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        pytest.param({"queue": "q\n"}, "queue", id="queue-trailing-newline"),
        pytest.param({"name": "x\n"}, "job name", id="name-trailing-newline"),
        pytest.param({"name": "x" * 201}, "job name", id="name-too-long"),
        pytest.param({"timeout": math.nan}, "timeout", id="timeout-nan"),
        pytest.param({"timeout": 1e300}, "timeout", id="timeout-beyond-an-interval"),
        pytest.param({"backoff": "fast"}, "backoff", id="backoff-not-a-policy"),
        pytest.param({"using": ["default"]}, "using", id="using-not-a-string"),
        pytest.param({"using": 10**5000}, "using", id="using-int-too-long-to-print"),
        pytest.param({"retry_on": 10**5000}, "retry_on", id="retry-on-int-too-long-to-print"),
        pytest.param({"backoff": 10**5000}, "backoff", id="backoff-int-too-long-to-print"),
    ],
)
def test_a_job_definition_the_database_would_refuse_is_refused_at_declaration(kwargs, field):
    with pytest.raises(InvalidJobOptionError, match=field):
        JobDefinition(lambda: None, **{"name": "tests.hostile", **kwargs})


@pytest.mark.parametrize(
    ("make", "match"),
    [
        pytest.param(lambda: workhorse.exponential(base=math.nan), "base", id="base-nan"),
        pytest.param(lambda: workhorse.exponential(max=math.inf), "max", id="max-infinity"),
        pytest.param(lambda: workhorse.exponential(jitter=math.nan), "jitter", id="jitter-nan"),
        pytest.param(lambda: workhorse.exponential(jitter="x"), "jitter", id="jitter-text"),
        pytest.param(lambda: workhorse.fixed(1e300), "delay", id="fixed-beyond-an-interval"),
        pytest.param(
            lambda: workhorse.exponential(jitter=10**5000), "jitter", id="jitter-int-too-long"
        ),
    ],
)
def test_a_backoff_policy_that_cannot_be_stored_is_refused(make, match):
    with pytest.raises(InvalidJobOptionError, match=match):
        make()


@pytest.mark.usefixtures("still_usable")
@pytest.mark.parametrize(
    ("value", "match"),
    [
        pytest.param(10**5000, "more than 4300 digits", id="int-beyond-the-digit-limit"),
        pytest.param(-(10**4300), "more than 4300 digits", id="negative-int-of-4301-digits"),
        pytest.param(nested(5000), f"more than {PAYLOAD_MAX_DEPTH} deep", id="nested-5000-deep"),
        pytest.param(nested(PAYLOAD_MAX_DEPTH), "deep", id="nested-one-too-deep"),
    ],
)
def test_a_payload_python_could_not_read_back_is_invalid_payload_error(value, match):
    """Bug: a bare ValueError and a RecursionError escaped instead."""
    with pytest.raises(InvalidPayloadError, match=match):
        add.enqueue(a=value, b=1)


def test_the_deepest_and_largest_accepted_values_are_stored_and_read_back(cursor):
    deepest = nested(PAYLOAD_MAX_DEPTH - 1)  # inside the payload object: the limit
    largest = 10**4300 - 1
    handle = add.enqueue(a=deepest, b=largest)
    assert store.get_job(cursor, handle.id)["payload"] == {"a": deepest, "b": largest}


@pytest.mark.usefixtures("still_usable")
def test_a_payload_larger_than_the_limit_is_refused_naming_the_limit():
    with pytest.raises(InvalidPayloadError, match=f"limit of {PAYLOAD_MAX_BYTES}"):
        add.enqueue(a="x" * PAYLOAD_MAX_BYTES, b=1)


@pytest.mark.usefixtures("still_usable")
def test_enqueue_many_names_the_payload_larger_than_the_limit_and_writes_nothing():
    payloads = [{"a": i, "b": i} for i in range(3)]
    payloads[2]["a"] = "x" * PAYLOAD_MAX_BYTES
    with pytest.raises(InvalidPayloadError, match=r"payloads\[2\] of 3: .*limit of"):
        add.enqueue_many(payloads)


def test_enqueue_many_takes_payloads_each_under_the_limit_that_together_exceed_it(cursor):
    third = "x" * (PAYLOAD_MAX_BYTES // 2)
    handles = add.enqueue_many([{"a": third, "b": i} for i in range(3)])
    assert [store.get_job(cursor, h.id)["payload"]["b"] for h in handles] == [0, 1, 2]


@pytest.mark.usefixtures("still_usable")
def test_enqueue_many_refuses_the_batch_when_one_payload_is_out_of_range():
    payloads = [{"a": i, "b": i} for i in range(10)]
    payloads[6]["b"] = 10**5000
    with pytest.raises(WorkhorseError, match=r"payload\['b'\]"):
        add.enqueue_many(payloads)


def test_every_refusal_names_the_value_and_the_rule():
    with pytest.raises(InvalidJobOptionError) as caught:
        add.options(delay=1e300).enqueue(a=1, b=2)
    message = str(caught.value)
    assert "delay" in message and "1e+300" in message and "3155760000" in message


def test_run_at_in_another_zone_is_stored_as_the_same_instant(db_rows):
    at = datetime(2400, 1, 1, 12, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    handle = add.options(run_at=at).enqueue(a=1, b=2)
    assert db_rows.runtime(handle.id)["run_at"] == at.astimezone(UTC)
