"""One rule for every value thrown at ``enqueue``: stored exactly, or refused cleanly.

Generated values (valid ones, edge cases, and hostile ones: NaN, infinities,
huge numbers, NUL characters, lone surrogates, trailing newlines, deep
nesting, wrong types) go into each option of ``.options(...)`` and into the
payload. For each call, either

- the job is stored and every option and the payload read back equal (the
  durations to the microsecond, the database's resolution), or
- a WorkhorseError is raised, no row was written, and the transaction still
  runs queries.

Counts per class of input are printed at the end of the module (``-s``) and,
with ``WORKHORSE_PROPERTY_REPORT=path``, written there as JSON.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_workhorse import WorkhorseError
from django_workhorse.core.definitions import JobDefinition
from django_workhorse.db import store

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("WORKHORSE_PROPERTY_EXAMPLES", "30"))
RUN = settings(
    max_examples=EXAMPLES,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

TALLY: dict[str, Counter] = {}


def take_any(**kwargs) -> None:
    """The handler: any keyword arguments."""


JOB = JobDefinition(take_any, name="tests.property.take_any", queue="property")

# -- strategies ------------------------------------------------------------

spoilers = st.sampled_from(["\x00", "\ud800", "\udcff", "\n", " ", "", "é", "\u2028"])
hostile_text = st.one_of(
    st.text(max_size=12),
    st.tuples(st.text(max_size=6), spoilers, st.text(max_size=6)).map("".join),
    st.text(st.characters(categories=["Cs"]), min_size=1, max_size=3),
    st.text(alphabet="ab", min_size=250, max_size=260),
)
name_like = st.one_of(
    st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,60}", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,10}\n", fullmatch=True),
    hostile_text,
)
huge_ints = st.integers(4290, 4310).map(lambda e: 10**e)
numbers = st.one_of(
    st.integers(-2000, 2000),
    st.integers(),
    huge_ints,
    st.floats(),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e300, -0.0, 5e-324, 1e-7, 3155760000.0]),
    st.booleans(),
)
durations = st.one_of(
    numbers,
    st.timedeltas(),
    st.sampled_from([timedelta.max, timedelta.min, timedelta(microseconds=1), timedelta(0)]),
    st.text(max_size=3),
)
offsets = st.timedeltas(
    min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23, minutes=59)
).map(timezone)
run_ats = st.one_of(
    st.datetimes(timezones=offsets),
    st.datetimes(timezones=st.none()),
    st.sampled_from(
        [
            datetime.min.replace(tzinfo=timezone(timedelta(hours=1))),
            datetime.max.replace(tzinfo=timezone(timedelta(hours=-1))),
            datetime.max.replace(tzinfo=UTC),
        ]
    ),
    st.text(max_size=5),
)
json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    huge_ints,
    st.floats(),
    hostile_text,
    st.sampled_from([(1, 2), {3}, b"x", object()]),
)
payload_values = st.recursive(
    json_leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(hostile_text, children, max_size=3)
    ),
    max_leaves=12,
)
deep = st.integers(90, 110).map(lambda depth: {"deep": json.loads("[" * depth + "]" * depth)})
payloads = st.one_of(st.dictionaries(hostile_text, payload_values, max_size=4), deep)

# -- the rule --------------------------------------------------------------


def row_count(cursor) -> int:
    cursor.execute(
        "SELECT (SELECT count(*) FROM workhorse_job) + (SELECT count(*) FROM workhorse_job_runtime)"
        " + (SELECT count(*) FROM workhorse_job_query) + (SELECT count(*) FROM workhorse_job_event)"
    )
    return cursor.fetchone()[0]


def stored_options(cursor, job_id: int) -> dict:
    cursor.execute(
        "SELECT j.queue, j.priority, j.max_attempts, j.max_stalled,"
        " extract(epoch FROM j.timeout)::float8, j.idempotency_key,"
        " r.run_at, extract(epoch FROM r.run_at - j.created_at)::float8"
        " FROM workhorse_job j JOIN workhorse_job_runtime r ON r.job_id = j.id WHERE j.id = %s",
        [job_id],
    )
    keys = ("queue", "priority", "max_attempts", "max_stalled", "timeout", "key", "run_at", "lag")
    return dict(zip(keys, cursor.fetchone(), strict=True))


def seconds(value) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def check_rule(cursor, kind: str, options: dict, payload: dict) -> None:
    """Enqueue; assert the single rule; count the outcome under ``kind``."""
    tally = TALLY.setdefault(kind, Counter())
    tally["cases"] += 1
    before = row_count(cursor)
    try:
        handle = JOB.options(**options).enqueue(**payload)
    except WorkhorseError:
        assert row_count(cursor) == before  # nothing written, and the transaction runs
        tally["refused, nothing written"] += 1
        return
    if not handle.inserted:
        # An earlier example of the same test took this idempotency key: the
        # enqueue wrote nothing and named the job that holds the key.
        assert row_count(cursor) == before
        assert stored_options(cursor, handle.id)["key"] == options["idempotency_key"]
        tally["key taken, existing job returned"] += 1
        return
    tally["stored, read back equal"] += 1
    assert store.get_job(cursor, handle.id)["payload"] == payload
    got = stored_options(cursor, handle.id)
    assert got["queue"] == options.get("queue", JOB.queue)
    assert got["priority"] == options.get("priority", 0)
    assert got["max_attempts"] == options.get("max_attempts", JOB.max_attempts)
    if "max_stalled" in options:
        assert got["max_stalled"] == options["max_stalled"]
    if options.get("timeout") is not None:
        assert abs(got["timeout"] - seconds(options["timeout"])) <= 0.5e-6
    if options.get("idempotency_key") is not None:
        assert got["key"] == options["idempotency_key"]
    if options.get("run_at") is not None:
        assert got["run_at"] == options["run_at"]
    if options.get("delay") is not None:
        assert abs(got["lag"] - seconds(options["delay"])) <= 0.5e-6


@pytest.fixture(scope="module", autouse=True)
def report_counts():
    yield
    lines = [f"{'input class':<18} {'cases':>6} {'stored':>7} {'refused (0 rows written)':>25}"]
    for kind, tally in sorted(TALLY.items()):
        lines.append(
            f"{kind:<18} {tally['cases']:>6} {tally['stored, read back equal']:>7} "
            f"{tally['refused, nothing written']:>25}"
        )
    print("\n" + "\n".join(lines))
    path = os.environ.get("WORKHORSE_PROPERTY_REPORT")
    if path:
        with open(path, "w") as out:
            json.dump({k: dict(v) for k, v in TALLY.items()}, out, indent=1, sort_keys=True)


@RUN
@given(value=name_like)
def test_queue(cursor, value):
    check_rule(cursor, "queue", {"queue": value}, {})


@RUN
@given(value=numbers)
def test_priority(cursor, value):
    check_rule(cursor, "priority", {"priority": value}, {})


@RUN
@given(value=numbers)
def test_max_attempts(cursor, value):
    check_rule(cursor, "max_attempts", {"max_attempts": value}, {})


@RUN
@given(value=numbers)
def test_max_stalled(cursor, value):
    check_rule(cursor, "max_stalled", {"max_stalled": value}, {})


@RUN
@given(value=durations)
def test_timeout(cursor, value):
    check_rule(cursor, "timeout", {"timeout": value}, {})


@RUN
@given(value=durations)
def test_delay(cursor, value):
    check_rule(cursor, "delay", {"delay": value}, {})


@RUN
@given(value=run_ats)
def test_run_at(cursor, value):
    check_rule(cursor, "run_at", {"run_at": value}, {})


@RUN
@given(value=hostile_text | numbers)
def test_idempotency_key(cursor, value):
    check_rule(cursor, "idempotency_key", {"idempotency_key": value}, {})


@RUN
@given(payload=payloads)
def test_payload(cursor, payload):
    check_rule(cursor, "payload", {}, payload)


@RUN
@given(
    options=st.fixed_dictionaries(
        {},
        optional={
            "queue": name_like,
            "priority": numbers,
            "max_attempts": numbers,
            "timeout": durations,
            "delay": durations,
            "idempotency_key": hostile_text,
        },
    ),
    payload=payloads,
)
def test_options_and_payload_together(cursor, options, payload):
    check_rule(cursor, "all together", options, payload)
