"""A job enqueued with positional arguments runs with the same arguments."""

from __future__ import annotations

import pytest

from django_workhorse.core.definitions import JobDefinition
from django_workhorse.operations.admin_api import Admin

pytestmark = pytest.mark.django_db


def send(invoice_id: int, copies: int = 1, *, urgent: bool = False) -> None:
    return None


def test_a_positional_enqueue_stores_the_keyword_payload():
    job = JobDefinition(send, name="tests.positional_send")
    handle = job.options(priority=3).enqueue(7, 2, urgent=True)
    assert Admin().get_job(handle.id).payload == {"invoice_id": 7, "copies": 2, "urgent": True}
