"""A success takes the same route to the database with metrics on as off.

The route is chosen from the worker's slots alone and named in its start-up
line; metrics and tracing read what they need from the rows of whichever
call claimed the jobs (``workhorse_claim_many_v1``), so a one-slot worker with
``--metrics-port`` still writes each success with its next claim, and every
job it claims that way still has its pickup observed (docs/worker.md,
docs/observability.md). Each worker says its route in its heartbeat too, so
``workhorse_status`` and the admin's Workers page show it per worker."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from jobtests.jobs import record

from django_workhorse import Admin
from django_workhorse.models import JobOutcome
from django_workhorse.worker.routes import SuccessRoute
from tests.acceptance.test_metrics import finished, free_port, scrape

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

JOBS = 30


@pytest.mark.parametrize("metrics", [False, True], ids=["plain", "metrics on"])
def test_a_one_slot_worker_names_the_same_route_and_observes_every_pickup(
    metrics, start_worker, wait_until
):
    port = free_port()
    flags = ["--queues", record.queue, *(["--metrics-port", str(port)] if metrics else [])]
    worker = start_worker(*flags)
    assert f"successes recorded {SuccessRoute.ONE_SLOT.value}" in worker.stderr

    ids = [h.id for h in record.enqueue_many([{"label": f"r{i}"} for i in range(JOBS)])]
    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=ids, state="succeeded").count() == JOBS,
        timeout=60,
        what="every job recorded",
    )
    if metrics:
        samples = wait_until(
            lambda: (
                (s := scrape(port))
                and finished(s, record.name, record.queue, "succeeded") == JOBS
                and s
            ),
            timeout=30,
            what="every success counted",
        )
        pickups = samples[("workhorse_job_pickup_seconds_count", (("queue", record.queue),))]
        assert pickups == JOBS
    assert worker.stop() == 0


def test_a_worker_of_several_slots_names_the_batched_route(start_worker):
    worker = start_worker("--queues", record.queue, "--concurrency", "4")
    assert f"successes recorded {SuccessRoute.BATCHED.value}" in worker.stderr
    assert worker.stop() == 0


def test_workhorse_status_shows_each_workers_success_route(start_worker, wait_until):
    one = start_worker("--queues", record.queue, "--concurrency", "1")
    four = start_worker("--queues", record.queue, "--concurrency", "4")
    wait_until(
        lambda: {w.worker_id for w in Admin().live_workers()} >= {one.worker_id, four.worker_id},
        timeout=30,
        what="both workers seen through their heartbeats",
    )

    text, as_json = StringIO(), StringIO()
    call_command("workhorse_status", stdout=text)
    call_command("workhorse_status", "--json", stdout=as_json)

    seen = {w["worker_id"]: w for w in json.loads(as_json.getvalue())["workers"]["seen"]}
    assert seen[one.worker_id]["success_route"] == SuccessRoute.ONE_SLOT.label == "one_slot"
    assert seen[four.worker_id]["success_route"] == SuccessRoute.BATCHED.label == "batched"
    lines = text.getvalue().splitlines()
    (one_line,) = [line for line in lines if line.strip().startswith(f"{one.worker_id} on ")]
    (four_line,) = [line for line in lines if line.strip().startswith(f"{four.worker_id} on ")]
    assert "0/1 slots busy" in one_line and "successes one_slot" in one_line
    assert "0/4 slots busy" in four_line and "successes batched" in four_line
    assert one.stop() == 0 and four.stop() == 0
