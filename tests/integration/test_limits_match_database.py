"""The rules of ``django_workhorse.core.limits`` are the database's own.

Every boundary Python enforces is probed in PostgreSQL through the SQL
function alone (no Python check in the way): the last accepted value is
stored, the first refused one is refused. If someone changes a CHECK or a
range on one side only, a test here fails.
"""

from __future__ import annotations

import json

import pytest
from django.db import DatabaseError, transaction

from django_workhorse.core import limits

pytestmark = pytest.mark.django_db

NAME = "tests.limits"


def stored_by_sql(cursor, **job) -> bool:
    """Whether workhorse_enqueue_many_v1 stores ``job`` (in a savepoint)."""
    doc = {"name": NAME, "queue": "limits", "payload": {}, **job}
    try:
        with transaction.atomic():
            cursor.execute("SELECT workhorse_enqueue_many_v1(%s::jsonb)", [json.dumps([doc])])
        return True
    except DatabaseError:
        return False


def accepted_by_python(field: str, value) -> bool:
    checks = {
        "name": lambda v: limits.job_name_problem(v),
        "queue": lambda v: limits.queue_name_problem(v),
        "priority": lambda v: limits.whole_problem(
            "priority", v, limits.PRIORITY_MIN, limits.PRIORITY_MAX
        ),
        "max_attempts": lambda v: limits.whole_problem(
            "max_attempts", v, limits.MAX_ATTEMPTS_MIN, limits.MAX_ATTEMPTS_MAX
        ),
        "max_stalled": lambda v: limits.whole_problem(
            "max_stalled", v, limits.MAX_STALLED_MIN, limits.MAX_STALLED_MAX
        ),
        "delay": lambda v: limits.duration_problem("delay", v, positive=False),
        "timeout": lambda v: limits.duration_problem("timeout", v, positive=True),
        "idempotency_key": lambda v: limits.idempotency_key_problem(v),
    }
    return checks[field](value) is None


M = limits.MAX_DURATION_SECONDS
BOUNDARIES = [
    ("name", "a" * limits.JOB_NAME_MAX, "a" * (limits.JOB_NAME_MAX + 1)),
    ("name", "a_b.c:d-e", "a\n"),
    ("name", "_x", "1x"),
    ("queue", "q" * limits.QUEUE_NAME_MAX, "q" * (limits.QUEUE_NAME_MAX + 1)),
    ("queue", "0q_.-", "q\n"),
    ("queue", "_", "-q"),
    ("priority", limits.PRIORITY_MAX, limits.PRIORITY_MAX + 1),
    ("priority", limits.PRIORITY_MIN, limits.PRIORITY_MIN - 1),
    ("max_attempts", limits.MAX_ATTEMPTS_MAX, limits.MAX_ATTEMPTS_MAX + 1),
    ("max_attempts", limits.MAX_ATTEMPTS_MIN, limits.MAX_ATTEMPTS_MIN - 1),
    ("max_stalled", limits.MAX_STALLED_MAX, limits.MAX_STALLED_MAX + 1),
    ("max_stalled", limits.MAX_STALLED_MIN, limits.MAX_STALLED_MIN - 1),
    ("delay", M, M + 0.001),
    ("delay", 0, -0.001),
    ("timeout", M, M + 0.001),
    ("timeout", limits.TIMEOUT_MIN_SECONDS, 0.0000009),
    ("timeout", 0.001, 0),
    ("idempotency_key", "k" * limits.IDEMPOTENCY_KEY_MAX, "k" * (limits.IDEMPOTENCY_KEY_MAX + 1)),
    ("idempotency_key", "k", ""),
]


@pytest.mark.parametrize(
    ("field", "inside", "outside"),
    BOUNDARIES,
    ids=[f"{f}-{i}" for i, (f, *_) in enumerate(BOUNDARIES)],
)
def test_python_and_the_database_draw_each_line_in_the_same_place(cursor, field, inside, outside):
    assert accepted_by_python(field, inside) and stored_by_sql(cursor, **{field: inside})
    assert not accepted_by_python(field, outside)
    assert not stored_by_sql(cursor, **{field: outside})


def test_the_database_refuses_a_nan_duration_as_python_does(cursor):
    # psql callers pass double precision; jsonb carries NaN as a string.
    for field in ("delay", "timeout"):
        assert not accepted_by_python(field, float("nan"))
        with pytest.raises(DatabaseError, match=field), transaction.atomic():
            cursor.execute(
                f"SELECT workhorse_enqueue_v1(%s, p_{field} => 'NaN'::double precision)", [NAME]
            )


def test_the_database_refuses_a_run_at_python_could_not_read_back(cursor):
    assert not stored_by_sql(cursor, run_at="10000-01-01T00:00:00+00:00")
    assert not stored_by_sql(cursor, run_at="0001-01-01T00:00:00+05:00")
    assert stored_by_sql(cursor, run_at="9999-12-31T23:59:59.999999+00:00")
    assert stored_by_sql(cursor, run_at="0001-01-01T00:00:00+00:00")


CHECKPOINT_NAMES = [
    ("c" * limits.CHECKPOINT_NAME_MAX, "c" * (limits.CHECKPOINT_NAME_MAX + 1)),
    ("1st_stage.a:b-c", "a\n"),
    ("_", "-a"),
    ("0", ""),
]


@pytest.mark.parametrize(("inside", "outside"), CHECKPOINT_NAMES)
def test_checkpoint_names_are_drawn_in_the_same_place(cursor, inside, outside):
    def stored(name: str) -> bool:
        try:
            with transaction.atomic():
                cursor.execute(
                    "INSERT INTO workhorse_job_checkpoint (job_id, name, result, attempt)"
                    " VALUES (0, %s, 'null', 1)",
                    [name],
                )
            return True
        except DatabaseError:
            return False

    assert limits.checkpoint_name_problem(inside) is None and stored(inside)
    assert limits.checkpoint_name_problem(outside) is not None
    assert not stored(outside)
