"""``manage.py check`` warns when jobs of one queue ask for different concurrency."""

from __future__ import annotations

import pytest

from django_workhorse import registry
from django_workhorse.checks import check_queue_concurrency
from django_workhorse.definitions import JobDefinition


@pytest.fixture(autouse=True)
def own_registry(monkeypatch):
    monkeypatch.setattr(registry, "_jobs", {})


def register(name: str, queue: str, concurrency: int | None) -> None:
    def handler() -> None:
        return None

    handler.__qualname__ = name
    registry.register(JobDefinition(handler, name=name, queue=queue, concurrency=concurrency))


def test_two_jobs_of_a_queue_asking_for_different_slots_are_named_with_the_winner():
    register("mail.first", "mail", 3)
    register("mail.second", "mail", 8)
    [warning] = check_queue_concurrency()
    assert warning.id == "workhorse.W003"
    assert "'mail.first' asks for 3 and 'mail.second' for 8" in warning.msg
    assert "workers give the queue 3 slot(s)" in warning.msg
    assert "WORKHORSE['QUEUES']['mail']['concurrency']" in warning.hint


def test_jobs_that_agree_or_leave_it_unset_are_not_reported():
    register("a.one", "a", 4)
    register("a.two", "a", 4)
    register("a.three", "a", None)
    register("b.one", "b", 2)
    assert check_queue_concurrency() == []
