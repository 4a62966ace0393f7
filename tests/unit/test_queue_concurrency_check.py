"""``manage.py check`` warns when jobs of one queue ask for different
concurrency, naming both; and the slot count a worker gives a queue follows
the order docs/settings.md states: ``QUEUES``, then the first registered
job's ``concurrency``, then ``--concurrency``, then ``CONCURRENCY``."""

from __future__ import annotations

import pytest
from django.test import override_settings

from django_workhorse.core import registry
from django_workhorse.core.definitions import JobDefinition
from django_workhorse.operations.checks import check_queue_concurrency
from django_workhorse.worker.options import resolve_options


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


def test_jobs_that_disagree_on_a_queue_the_queues_setting_sizes_are_not_reported():
    register("mail.first", "mail", 3)
    register("mail.second", "mail", 8)
    with override_settings(WORKHORSE={"QUEUES": {"mail": {"concurrency": 5}}}):
        assert check_queue_concurrency() == []  # QUEUES settles it: workers give 5 slots
    with override_settings(WORKHORSE={"QUEUES": {"mail": {"global_concurrency": 2}}}):
        [warning] = check_queue_concurrency()  # a limit alone sizes no slots
    assert "workers give the queue 3 slot(s)" in warning.msg


def slots(queue: str, *, flag: int | None = None, **workhorse) -> int:
    with override_settings(WORKHORSE=workhorse):
        return resolve_options(queues=[queue], concurrency=flag).concurrency[queue]


def test_queues_setting_wins_over_the_jobs_and_the_flag():
    register("mail.first", "mail", 3)
    assert slots("mail", flag=7, QUEUES={"mail": {"concurrency": 5}}) == 5


def test_the_first_registered_job_wins_over_the_flag_and_a_later_job():
    register("mail.first", "mail", 3)
    register("mail.second", "mail", 8)
    assert slots("mail", flag=7, CONCURRENCY=2) == 3


def test_the_flag_wins_over_the_setting_for_a_queue_nobody_sizes():
    register("mail.first", "mail", None)
    assert slots("mail", flag=7, CONCURRENCY=2) == 7
    assert slots("mail", CONCURRENCY=2) == 2
