"""A job's page shows its timeline 100 entries at a time and the first 100
jobs that depend on it (docs/admin.md)."""

from __future__ import annotations

import pytest
from demo.jobs import add

from django_workhorse import Admin
from tests.factories import ActiveJobFactory, ReadyJobFactory

pytestmark = pytest.mark.django_db

JOBS = "/admin/django_workhorse/job/"


def test_the_job_page_shows_the_timeline_100_entries_at_a_time(operator_client):
    job = ActiveJobFactory()
    for n in range(120):  # each cancel of a running job asks again: one event each
        assert Admin().cancel(job.id, reason=f"ask {n}").status == "requested"

    first = operator_client.get(f"{JOBS}{job.id}/")
    assert len(first.context["entries"]) == 100
    assert first.context["timeline_next"]
    rest = operator_client.get(f"{JOBS}{job.id}/" + first.context["timeline_next"])

    seen = [e["entry"] for e in first.context["entries"] + rest.context["entries"]]
    assert len(seen) == 122  # enqueued, claimed and the 120 requests
    assert len({(e.kind, e.at, e.data.get("reason") if e.data else None) for e in seen}) == 122
    assert rest.context["timeline_next"] is None
    assert '<a href="?">&laquo; start</a>' in rest.content.decode()


def test_the_job_page_lists_the_first_100_dependents(operator_client):
    prerequisite = ReadyJobFactory()
    add.options(queue=prerequisite.queue, depends_on=[prerequisite.id]).enqueue_many(
        [{"a": n, "b": 0} for n in range(101)]
    )

    response = operator_client.get(f"{JOBS}{prerequisite.id}/")

    body = response.content.decode()
    dependents = body.split('id="wh-dependents"')[1].split("</ul>")[0]
    assert dependents.count('class="wh-badge wh-blocked"') == 100
    assert "(the first 100)" in dependents
