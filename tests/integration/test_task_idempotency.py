"""A task enqueued with ``using(idempotency_key=...)`` a second time
(docs/django-tasks.md) returns the first task's result and writes nothing:
no second job, and no second ``task_enqueued``."""

from __future__ import annotations

import pytest
from jobtests.tasks import add

from django_workhorse.models import Job
from django_workhorse.tasks.compat import task_enqueued
from django_workhorse.testing import run_jobs

pytestmark = pytest.mark.django_db


def test_a_second_enqueue_with_the_key_returns_the_first_result_and_sends_no_signal():
    sent = []

    def on_enqueued(sender, task_result, **kwargs):
        sent.append(task_result.id)

    task_enqueued.connect(on_enqueued)
    try:
        first = add.using(idempotency_key="audit-sum-once").enqueue(1, 2)
        second = add.using(idempotency_key="audit-sum-once").enqueue(40, 2)
    finally:
        task_enqueued.disconnect(on_enqueued)

    assert second.id == first.id
    assert (second.args, second.kwargs) == ([1, 2], {})
    assert sent == [first.id]
    assert Job.objects.filter(idempotency_key="audit-sum-once").count() == 1
    run_jobs(names=[add])
    assert add.get_result(first.id).return_value == 3
