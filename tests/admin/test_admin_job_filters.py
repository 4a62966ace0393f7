"""The admin's job list filters by queue, name and state, alone or together
(docs/admin.md), and a filter value that cannot be a queue or job name gets a
message, not a server error."""

from __future__ import annotations

import pytest
from demo.jobs import add, noop
from django.contrib.messages import get_messages

from tests.factories import FailedJobFactory, ReadyJobFactory

pytestmark = pytest.mark.django_db

JOBS = "/admin/django_workhorse/job/"


def listed(client, **query) -> list[int]:
    response = client.get(JOBS, query)
    assert response.status_code == 200
    return [job.id for job in response.context["page"].items]


def test_the_job_list_filters_by_name_queue_and_state_together(operator_client):
    failed_add = FailedJobFactory(queue="audit-filter").id  # first: its claim takes any
    adds = [ReadyJobFactory(queue="audit-filter").id for _ in range(2)]
    noops = [ReadyJobFactory(queue="audit-filter", definition=noop, payload={}).id]
    elsewhere = ReadyJobFactory(queue="audit-filter-other").id

    assert listed(operator_client, name=add.name, queue="audit-filter") == [*adds[::-1], failed_add]
    assert listed(operator_client, name=noop.name, queue="audit-filter") == noops
    assert listed(operator_client, name=add.name, queue="audit-filter", state="failed") == [
        failed_add
    ]
    assert elsewhere in listed(operator_client, name=add.name)
    assert elsewhere not in listed(operator_client, queue="audit-filter")


@pytest.mark.parametrize(
    ("query", "message"),
    [({"name": "bad name"}, "is not a job name"), ({"queue": "x" * 60}, "is not a queue name")],
)
def test_a_filter_that_cannot_match_gets_a_message(operator_client, query, message):
    response = operator_client.get(JOBS, query)
    assert response.status_code == 200
    assert any(message in str(m) for m in get_messages(response.wsgi_request))


def test_the_admin_index_has_a_workhorse_jobs_section_with_jobs_and_queues(operator_client):
    body = operator_client.get("/admin/").content.decode()
    assert "Workhorse jobs" in body  # the section getting-started.md names
    assert 'href="/admin/django_workhorse/job/"' in body
    assert 'href="/admin/django_workhorse/queue/"' in body


def test_a_queue_with_no_job_yet_stays_chosen_in_the_filter(operator_client):
    ReadyJobFactory(queue="audit-filter")

    body = operator_client.get(JOBS, {"queue": "audit-empty"}).content.decode()

    assert '<option value="audit-empty" selected>' in body
