"""No job waits in silence (docs/admin.md, "A queue no worker serves"): a
job on a queue that no live worker serves says so on its page, the queues
page lists the queue with the queues the workers do serve (and those it
looks like), and so does ``manage.py workhorse_status``. The workers are
rows of the registry, written as a worker's heartbeat writes them."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from django_workhorse.db import store
from django_workhorse.worker.presence import describe_worker
from tests.factories import ActiveJobFactory, ReadyJobFactory, ScheduledJobFactory

pytestmark = pytest.mark.django_db

QUEUES = "/admin/django_workhorse/queue/"
JOBS = "/admin/django_workhorse/job/"


def worker_serving(*queues: str, worker_id: str = "host-u:1:abc") -> None:
    """A live worker that serves ``queues``, as its heartbeat records it."""
    info = describe_worker(worker_id, dict.fromkeys(queues, 2), 0, 15.0, "batched")
    with connection.cursor() as cursor:
        store.heartbeat_many(cursor, worker_id, [], [], 30, json.dumps(info))


def unserved_note(body: str) -> str:
    return body[body.index('id="wh-unserved"') :].split("</p>")[0].split("</ul>")[0]


def test_the_page_of_a_job_on_a_mistyped_queue_names_the_queues_workers_serve(operator_client):
    worker_serving("u-email", "u-default")
    job = ReadyJobFactory(queue="u-emial")

    body = operator_client.get(f"{JOBS}{job.id}/").content.decode()

    note = unserved_note(body)
    assert "no worker serves queue &#x27;u-emial&#x27;" in note
    assert "workers serve: u-default, u-email" in note
    assert "did you mean &#x27;u-email&#x27;?" in note


def test_the_page_of_a_job_with_no_worker_connected_says_none_is(operator_client):
    job = ScheduledJobFactory(queue="u-lonely")

    body = operator_client.get(f"{JOBS}{job.id}/").content.decode()

    assert "no live worker is connected to this database" in unserved_note(body)


def test_the_page_of_a_job_on_a_served_queue_has_no_note(operator_client):
    worker_serving("u-served")
    job = ReadyJobFactory(queue="u-served")

    body = operator_client.get(f"{JOBS}{job.id}/").content.decode()

    assert 'id="wh-unserved"' not in body


def test_the_page_of_a_running_job_has_no_note(operator_client):
    # A worker holds it, whatever the registry says.
    job = ActiveJobFactory(queue="u-running")

    body = operator_client.get(f"{JOBS}{job.id}/").content.decode()

    assert 'id="wh-unserved"' not in body


def test_the_queues_page_lists_a_queue_with_waiting_jobs_that_no_worker_serves(
    operator_client,
):
    worker_serving("u-reports")
    ReadyJobFactory(queue="u-reprots")
    ReadyJobFactory(queue="u-reports")

    body = operator_client.get(QUEUES).content.decode()

    notes = body[body.index('<ul class="wh-links wh-wrap" id="wh-unserved">') :].split("</ul>")[0]
    assert "no worker serves queue &#x27;u-reprots&#x27;; workers serve: u-reports" in notes
    assert "did you mean &#x27;u-reports&#x27;?" in notes
    assert "&#x27;u-reports&#x27;;" not in notes  # the served queue is not listed


def test_workhorse_status_names_a_queue_no_worker_serves(db):
    worker_serving("u-billing")
    ReadyJobFactory(queue="u-biling")
    ReadyJobFactory(queue="u-billing")
    out = StringIO()

    call_command("workhorse_status", stdout=out)

    text = out.getvalue()
    assert (
        "no worker serves queue 'u-biling'; workers serve: u-billing (did you mean 'u-billing'?)"
        in text.splitlines()
    )
    assert "no worker serves queue 'u-billing'" not in text


def test_workhorse_status_json_says_whether_a_worker_serves_each_queue(db):
    worker_serving("u-json-served")
    ReadyJobFactory(queue="u-json-served")
    ReadyJobFactory(queue="u-json-unserved")
    out = StringIO()

    call_command("workhorse_status", "--json", stdout=out)

    queues = {q["queue"]: q for q in json.loads(out.getvalue())["queues"]}
    assert queues["u-json-served"]["served"] is True
    assert queues["u-json-served"]["unserved"] is None
    assert queues["u-json-unserved"]["served"] is False
    assert queues["u-json-unserved"]["unserved"].startswith(
        "no worker serves queue 'u-json-unserved'; workers serve: u-json-served"
    )
