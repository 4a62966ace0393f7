"""The array arguments store builds as text reach PostgreSQL exactly as given."""

from __future__ import annotations

import json

import pytest

from django_workhorse.db.store import JSONB_ARRAY, _ints, _json_list, _names

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("values", [[], [1], [3, 1, 2], [2**62, -5, 0]])
def test_integer_arrays_round_trip(cursor, values):
    cursor.execute("SELECT %s::bigint[]", [_ints(values)])
    assert cursor.fetchone()[0] == values


@pytest.mark.parametrize(
    "values", [[], ["default"], ["a.b", "c-d_e"], ['quote"d', "back\\slash", "comma,{brace}"]]
)
def test_text_arrays_round_trip(cursor, values):
    cursor.execute("SELECT %s::text[]", [_names(values)])
    assert cursor.fetchone()[0] == values


@pytest.mark.parametrize(
    "values", [[], [None], [{"a": [1, "x"]}, "text", 1.5, None, {"q": 'say "hi"\\n'}]]
)
def test_json_arrays_round_trip_in_order(cursor, values):
    texts = [json.dumps(v) for v in values]
    cursor.execute(f"SELECT array_to_json({JSONB_ARRAY})::text", [_json_list(texts)])
    assert json.loads(cursor.fetchone()[0]) == values


def test_parallel_arrays_of_different_lengths_are_refused_by_the_function(cursor):
    from django.db import DataError

    from django_workhorse.db import store

    with pytest.raises(DataError, match="succeed_many_v1: 2 ids, 1 fences, 2 results"):
        store.succeed_many(cursor, "w", [1, 2], [1], ["null", "null"])


def test_a_short_optional_array_of_fail_many_is_refused_by_the_function(cursor):
    from django.db import DataError

    from django_workhorse.db import store

    with pytest.raises(DataError, match="fail_many_v1: 2 ids, 2 fences, 2 errors, 1 kinds"):
        store.fail_many(cursor, "w", [1, 2], [1, 1], ["{}", "{}"], ["failed"], [True, True], [0, 0])
