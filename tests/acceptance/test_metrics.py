"""``runworker --metrics-port``: Prometheus metrics over HTTP, one merged view
under ``--processes``, and the queue-depth gauge when QUEUE_METRICS_INTERVAL is set."""

from __future__ import annotations

import os
import signal
import socket
import urllib.request
from datetime import timedelta

import pytest
from django.db import connection
from jobtests.jobs import async_stuck, doomed, record, rendezvous
from jobtests.models import RunRecord
from prometheus_client.parser import text_string_to_metric_families

from django_workhorse import Admin
from django_workhorse.db import store
from django_workhorse.models import JobOutcome

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    """Every sample of the endpoint as {(name, sorted labels): value}; {} while it is down."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return {}
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def finished(samples, name: str, queue: str, outcome: str) -> float:
    labels = (("name", name), ("outcome", outcome), ("queue", queue))
    return samples.get(("workhorse_jobs_finished_total", labels), 0.0)


def test_two_processes_serve_one_merged_view_with_counters_and_the_depth_gauge(
    start_worker, wait_until
):
    port = free_port()
    supervisor = start_worker(
        "--processes",
        "2",
        "--metrics-port",
        str(port),
        "--queues",
        "jobtests.record,jobtests.doomed,jobtests.cancel",
        "--concurrency",
        "2",
        settings={"QUEUE_METRICS_INTERVAL": 0.3},
        ready=False,
    )
    supervisor.wait_ready(count=2, timeout=90)
    # Four runs that each wait until all four run at once: with two slots per
    # child, each child runs two, so both children's counters are merged.
    together = [h.id for h in rendezvous.enqueue_many([{"label": "both", "parties": 4}] * 4)]
    ids = [h.id for h in record.enqueue_many([{"label": str(i)} for i in range(20)])]
    failing = doomed.enqueue()
    record.options(delay=timedelta(hours=1)).enqueue_many([{"label": "later"}] * 3)
    wait_until(
        lambda: (
            JobOutcome.objects.filter(job_id__in=ids, state="succeeded").count() == 20
            and JobOutcome.objects.filter(job_id__in=together, state="succeeded").count() == 4
            and JobOutcome.objects.filter(job_id=failing.id, state="failed").exists()
        ),
        timeout=60,
        what="the jobs done",
    )

    samples = wait_until(
        lambda: (
            (s := scrape(port))
            and finished(s, "jobtests.jobs.record", "jobtests.record", "succeeded") == 20
            and finished(s, "jobtests.jobs.doomed", "jobtests.doomed", "failed") == 1
            and finished(s, "jobtests.jobs.rendezvous", "jobtests.cancel", "succeeded") == 4
            and s
        ),
        timeout=30,
        what="the merged counters",
    )
    assert len({pid for pid in supervisor.children()}) == 2
    with connection.cursor() as cursor:
        ran_on = [a.worker_id for job_id in together for a in store.get_attempts(cursor, job_id)]
    assert len(ran_on) == 4
    assert set(ran_on) == set(supervisor.worker_ids()), "both children ran jobs"
    assert len(set(ran_on)) == 2
    assert finished(samples, "jobtests.jobs.doomed", "jobtests.doomed", "retried") == 1
    run_count = (
        "workhorse_job_run_seconds_count",
        (("name", "jobtests.jobs.record"), ("queue", "jobtests.record")),
    )
    assert samples[run_count] == 20
    pickups = samples[("workhorse_job_pickup_seconds_count", (("queue", "jobtests.record"),))]
    assert pickups == 20
    depth = wait_until(
        lambda: scrape(port).get(
            ("workhorse_queue_depth", (("queue", "jobtests.record"), ("state", "scheduled")))
        ),
        timeout=30,
        what="the depth gauge",
    )
    assert depth == 3
    assert supervisor.stop() == 0


def test_without_queue_metrics_interval_no_depth_is_sampled(start_worker, wait_until):
    port = free_port()
    worker = start_worker("--metrics-port", str(port), "--queues", "jobtests.record")
    record.options(delay=timedelta(hours=1)).enqueue(label="later")
    handle = record.enqueue(label="now")
    wait_until(lambda: JobOutcome.objects.filter(job_id=handle.id, state="succeeded").exists())

    samples = wait_until(
        lambda: (
            (s := scrape(port))
            and finished(s, "jobtests.jobs.record", "jobtests.record", "succeeded") == 1
            and s
        ),
        timeout=30,
        what="the counter",
    )
    assert worker.stop() == 0
    assert not [key for key in samples if key[0] == "workhorse_queue_depth"]


def test_a_metrics_port_in_use_is_refused_with_the_flag(start_worker):
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        port = busy.getsockname()[1]
        worker = start_worker(
            "--metrics-port", str(port), "--queues", "jobtests.record", ready=False
        )
        assert worker.wait_exit(30) != 0
    assert f"--metrics-port {port}" in worker.stderr


def test_a_cancelled_running_job_is_counted_as_canceled(start_worker, wait_until):
    port = free_port()
    worker = start_worker("--metrics-port", str(port), "--queues", "jobtests.cancel")
    job = async_stuck.enqueue()
    wait_until(lambda: RunRecord.objects.filter(job_id=job.id).exists(), what="the run")

    assert Admin().cancel(job.id).status == "requested"

    wait_until(
        lambda: (
            finished(scrape(port), "jobtests.jobs.async_stuck", "jobtests.cancel", "canceled") == 1
        ),
        timeout=30,
        what="the canceled counter",
    )
    assert worker.stop() == 0


def test_the_merged_views_files_are_removed_when_the_supervisor_stops(
    start_worker, wait_until, tmp_path
):
    port = free_port()
    temp = tmp_path / "temp"
    temp.mkdir()
    supervisor = start_worker(
        "--processes",
        "2",
        "--metrics-port",
        str(port),
        "--queues",
        "jobtests.record",
        env={"TMPDIR": str(temp)},
        ready=False,
    )
    supervisor.wait_ready(count=2, timeout=90)
    handle = record.enqueue(label="counted")
    wait_until(
        lambda: finished(scrape(port), "jobtests.jobs.record", "jobtests.record", "succeeded") == 1,
        timeout=30,
        what="the counter",
    )
    assert [p.name for p in temp.iterdir() if p.name.startswith("workhorse-metrics-")]

    assert supervisor.stop() == 0

    assert JobOutcome.objects.filter(job_id=handle.id, state="succeeded").exists()
    assert list(temp.iterdir()) == []


def test_the_merged_depth_gauge_forgets_what_a_dead_child_sampled(start_worker, wait_until):
    port = free_port()
    supervisor = start_worker(
        "--processes",
        "2",
        "--metrics-port",
        str(port),
        "--queues",
        "jobtests.record",
        settings={"QUEUE_METRICS_INTERVAL": 0.3},
        ready=False,
    )
    supervisor.wait_ready(count=2, timeout=90)
    later = record.options(delay=timedelta(hours=1)).enqueue_many([{"label": "later"}] * 3)
    scheduled = ("workhorse_queue_depth", (("queue", "jobtests.record"), ("state", "scheduled")))
    wait_until(lambda: scrape(port).get(scheduled) == 3, timeout=30, what="the depth gauge")

    # Both children die (whichever sampled), and the jobs they counted go
    # before their successors start.
    for pid in supervisor.children():
        os.kill(pid, signal.SIGKILL)
    for handle in later:
        Admin().cancel(handle.id)
    supervisor.wait_ready(count=4, timeout=90)
    other = ("workhorse_queue_depth", (("queue", "jobtests.doomed"), ("state", "scheduled")))
    doomed.options(delay=timedelta(hours=1)).enqueue()
    wait_until(lambda: scrape(port).get(other) == 1, timeout=30, what="a sample by a successor")

    assert scrape(port).get(scheduled) in (None, 0)
    assert supervisor.stop() == 0
