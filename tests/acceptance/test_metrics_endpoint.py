"""Where and how ``runworker --metrics-port`` listens (docs/observability.md):
on 127.0.0.1 unless ``--metrics-addr`` says otherwise, and from one thread,
so that connections held open without a request neither grow the worker's
threads nor keep a scrape from its answer."""

from __future__ import annotations

import os
import socket
import subprocess
import urllib.request

import pytest
from jobtests.jobs import record
from jobtests.models import RunRecord

from tests.acceptance.test_metrics import free_port, scrape
from tests.helpers import poll_until

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def listening(port: int) -> list[str]:
    """The local addresses ``ss -ltn`` shows listening on ``port``."""
    out = subprocess.run(
        ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True
    ).stdout
    return [line.split()[3] for line in out.splitlines()]


def answers(port: int) -> bool:
    """Whether GET /metrics is answered 200 (a merged view may have no samples yet)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def run_one(label: str) -> None:
    handle = record.enqueue(label=label)
    poll_until(
        lambda: RunRecord.objects.filter(label=label).exists(),
        timeout=30,
        interval=0.05,
        what=f"job {label!r}",
    )
    poll_until(
        lambda: handle.refresh().status == "succeeded",
        timeout=30,
        interval=0.05,
        what="its success",
    )


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


@pytest.mark.parametrize("processes", ["1", "2"])
def test_the_endpoint_listens_on_127_0_0_1_by_default(start_worker, wait_until, processes):
    port = free_port()
    worker = start_worker(
        "--metrics-port",
        str(port),
        "--processes",
        processes,
        "--queues",
        "jobtests.record",
        processes=int(processes),
    )

    assert listening(port) == [f"127.0.0.1:{port}"]
    wait_until(lambda: answers(port), what="the endpoint answering")
    assert worker.stop() == 0


def test_metrics_addr_chooses_the_address_the_endpoint_listens_on(start_worker, wait_until):
    port = free_port()
    worker = start_worker(
        "--metrics-port", str(port), "--metrics-addr", "0.0.0.0", "--queues", "jobtests.record"
    )

    assert listening(port) == [f"0.0.0.0:{port}"]
    wait_until(lambda: scrape(port), what="the endpoint answering")
    assert worker.stop() == 0


def test_metrics_addr_without_a_port_is_refused(start_worker):
    worker = start_worker("--metrics-addr", "0.0.0.0", "--queues", "jobtests.record", ready=False)

    assert worker.wait_exit(60) != 0
    assert "--metrics-addr 0.0.0.0 is where metrics are served: add --metrics-port" in (
        worker.stderr
    )


def test_200_idle_connections_leave_the_workers_threads_bounded_and_the_endpoint_answering(
    start_worker, wait_until
):
    port = free_port()
    worker = start_worker("--metrics-port", str(port), "--queues", "jobtests.record")
    wait_until(lambda: scrape(port), what="the endpoint answering")
    run_one("before idle connections")  # the handler slot's thread exists from here on
    before = threads(worker.pid)

    held = []
    try:
        for _ in range(200):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # never finished
            held.append(sock)

        # Prometheus's own server started a thread for each: 12 became 207.
        # The margin is for the worker's own threads that come and go.
        assert threads(worker.pid) <= before + 2
        assert wait_until(lambda: scrape(port), what="a scrape answered beside them")
        run_one("beside idle connections")
        assert threads(worker.pid) <= before + 2
    finally:
        for sock in held:
            sock.close()
    assert worker.stop() == 0


def test_an_address_the_endpoint_cannot_listen_on_stops_the_worker_naming_both_flags(start_worker):
    port = free_port()
    # TEST-NET-3: no interface of this host has it.
    worker = start_worker(
        "--metrics-port",
        str(port),
        "--metrics-addr",
        "203.0.113.7",
        "--queues",
        "jobtests.record",
        ready=False,
    )

    assert worker.wait_exit(60) != 0
    assert f"--metrics-port {port} on --metrics-addr 203.0.113.7: " in worker.stderr
    assert "Traceback" not in worker.stderr
