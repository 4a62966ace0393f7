"""A job whose stored JSON Python cannot decode still has its page: a worker
in another language may record an error with a number of more digits than
Python reads, or nested deeper than its decoder goes (docs/sql.md), and the
page shows such a value as its JSON text (docs/admin.md: no page answers a
server error)."""

from __future__ import annotations

import pytest
from django.db import connection

from django_workhorse import store
from tests.factories import ActiveJobFactory

pytestmark = pytest.mark.django_db

JOBS = "/admin/django_workhorse/job/"

HUGE = "1" + "0" * 5000  # beyond sys.get_int_max_str_digits()


def failed_with(error_json: str) -> int:
    job = ActiveJobFactory(max_attempts=1)
    with connection.cursor() as cursor:
        store.fail_many(
            cursor, job.worker, [job.id], [job.fence], [error_json], ["failed"], [True], [0.0]
        )
    return job.id


def test_a_job_whose_error_has_a_number_python_cannot_read_has_its_page(operator_client):
    job_id = failed_with('{"type": "Overflow", "message": "too big", "n": ' + HUGE + "}")

    response = operator_client.get(f"{JOBS}{job_id}/")

    assert response.status_code == 200
    body = response.content.decode()
    assert body.count(HUGE[:200]) >= 2  # the error, and the attempt's in the timeline


def test_a_job_whose_error_nests_deeper_than_python_reads_has_its_page(operator_client):
    job_id = failed_with(
        '{"type": "Deep", "message": "m", "x": %s}' % ("[" * 10_000 + "]" * 10_000)
    )

    response = operator_client.get(f"{JOBS}{job_id}/")

    assert response.status_code == 200
    assert "[[[[[[[[" in response.content.decode()
