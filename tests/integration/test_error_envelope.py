"""A failed run's error is always storable as jsonb, whatever its message holds."""

from __future__ import annotations

import json

import pytest

from django_workhorse.worker.outcomes import error_json

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("message", "stored"),
    [
        ("file b'\\xff' -> " + b"\xff".decode("utf-8", "surrogateescape"), "file b'\\xff' -> ?"),
        ("nul \x00 inside", "nul \\u0000 inside"),
        ("plain é ✓", "plain é ✓"),
    ],
)
def test_an_error_message_jsonb_could_not_hold_is_stored_with_a_stand_in(cursor, message, stored):
    try:
        raise ValueError(message)
    except ValueError as exc:
        text = error_json(exc)
    cursor.execute("SELECT %s::jsonb ->> 'message', %s::jsonb ->> 'traceback'", [text, text])
    got_message, got_traceback = cursor.fetchone()
    assert got_message == stored
    assert "ValueError" in got_traceback
    assert json.loads(text)["type"] == "builtins.ValueError"
