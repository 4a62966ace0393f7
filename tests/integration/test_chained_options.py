"""``.options()`` over ``.options()``: the later call wins.

``delay`` and ``run_at`` are two ways of saying when a job is due, so a later
call's one replaces an earlier call's other; naming both in one call is
still refused.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from demo.jobs import add

from django_workhorse import InvalidJobOptionError

pytestmark = pytest.mark.django_db


def test_a_later_run_at_replaces_an_earlier_delay(db_rows):
    when = datetime(2040, 1, 2, 3, 4, 5, tzinfo=UTC)
    job = add.options(delay=60).options(run_at=when).enqueue(a=1, b=2)
    assert db_rows.runtime(job.id)["run_at"] == when


def test_a_later_delay_replaces_an_earlier_run_at(db_rows):
    preset = add.options(run_at=datetime(2040, 1, 1, tzinfo=UTC))
    job = preset.options(delay=3600).enqueue(a=1, b=2)
    wait = db_rows.runtime(job.id)["run_at"] - db_rows.now()
    assert timedelta(minutes=59) < wait <= timedelta(hours=1)


def test_a_later_call_that_names_neither_keeps_the_earlier_due_time(db_rows):
    when = datetime(2040, 1, 2, tzinfo=UTC)
    job = add.options(run_at=when).options(priority=5).enqueue(a=1, b=2)
    assert db_rows.runtime(job.id)["run_at"] == when


def test_delay_and_run_at_in_one_call_are_still_refused():
    with pytest.raises(InvalidJobOptionError, match="either delay or run_at"):
        add.options(delay=60).options(delay=5, run_at=datetime(2040, 1, 1, tzinfo=UTC))
