"""The metrics endpoint's bounds (docs/observability.md): a request must
arrive whole within the read timeout, at most so many connections are held
(the oldest goes for a new one), a scrape is answered beside idle ones and
beside clients that never read their answers, and anything but
``GET /metrics`` gets a plain refusal."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge

from django_workhorse.operations.metrics_endpoint import MetricsEndpoint


@pytest.fixture
def endpoint() -> Iterator[MetricsEndpoint]:
    registry = CollectorRegistry()
    Counter("workhorse_probe", "A sample to serve.", registry=registry).inc()
    served = MetricsEndpoint("127.0.0.1", 0, registry, read_timeout=0.5, max_connections=8)
    yield served
    served.close()


def ask(endpoint: MetricsEndpoint, request: bytes) -> bytes:
    with socket.create_connection(endpoint.address, timeout=10) as sock:
        sock.sendall(request)
        return read_to_end(sock)


def read_to_end(sock: socket.socket) -> bytes:
    """What the endpoint sent until it closed the connection (a close with
    the request unread arrives as a reset)."""
    chunks = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    return b"".join(chunks)


def test_get_metrics_is_answered_with_the_text_format(endpoint):
    answer = ask(endpoint, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")

    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"Content-Type: text/plain; version=" in answer
    assert b"\nworkhorse_probe_total 1.0\n" in answer


def test_a_request_not_sent_whole_within_the_read_timeout_is_closed(endpoint):
    with socket.create_connection(endpoint.address, timeout=30) as sock:
        sock.sendall(b"GET /metrics HTTP/1.1\r\n")  # and nothing more

        assert read_to_end(sock) == b""  # closed by the endpoint, unanswered


def test_the_longest_held_connection_is_closed_for_a_new_one_past_the_limit(endpoint):
    held = [socket.create_connection(endpoint.address, timeout=30) for _ in range(8)]
    try:
        held[0].sendall(b"GET /metrics HTTP/1.1\r\n")
        answer = ask(endpoint, b"GET /metrics HTTP/1.1\r\n\r\n")  # the ninth

        assert answer.startswith(b"HTTP/1.1 200 OK")
        assert read_to_end(held[0]) == b""
    finally:
        for sock in held:
            sock.close()


def test_the_endpoint_serves_from_one_thread_however_many_connections_wait(endpoint):
    before = threading.active_count()
    held = [socket.create_connection(endpoint.address, timeout=30) for _ in range(50)]
    try:
        answer = ask(endpoint, b"GET /metrics HTTP/1.1\r\n\r\n")

        assert answer.startswith(b"HTTP/1.1 200 OK")
        assert threading.active_count() == before
    finally:
        for sock in held:
            sock.close()


def test_a_client_that_never_reads_its_answer_holds_up_no_other_answer():
    registry = CollectorRegistry()
    # An answer larger than the kernel buffers for a client that reads nothing.
    big = Gauge("workhorse_probe", "A large sample.", ["label"], registry=registry)
    big.labels("x" * 8_000_000).set(1)
    served = MetricsEndpoint("127.0.0.1", 0, registry, write_timeout=600)
    request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
    held = []
    try:
        for _ in range(2):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(30)
            sock.connect(served.address)
            sock.sendall(request)
            assert sock.recv(1, socket.MSG_PEEK) == b"H"  # its answer has begun
            held.append(sock)

        answer = ask(served, request)  # waits 10 s at most for each read

        assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
        assert len(answer) > 8_000_000
        for sock in held:  # and theirs is still whole when they read it
            assert read_to_end(sock) == answer
    finally:
        for sock in held:
            sock.close()
        served.close()


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET /admin HTTP/1.1\r\n\r\n", b"404 Not Found"),
        (b"POST /metrics HTTP/1.1\r\n\r\n", b"405 Method Not Allowed"),
        (b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 10000, b"431 Request Header Fields Too Large"),
        (b"nonsense\r\n\r\n", b"405 Method Not Allowed"),
    ],
)
def test_anything_but_a_get_of_the_metrics_is_refused_plainly(endpoint, request_bytes, status):
    assert ask(endpoint, request_bytes).startswith(b"HTTP/1.1 " + status)


def test_a_scrape_whose_metrics_cannot_be_read_is_a_503_and_the_next_one_is_answered():
    class FailsOnce:
        failed = False

        def collect(self):
            if not FailsOnce.failed:
                FailsOnce.failed = True
                raise ValueError("a metrics file read while it was made")
            return []

    registry = CollectorRegistry()
    Counter("workhorse_probe", "A sample to serve.", registry=registry).inc()
    registry.register(FailsOnce())
    served = MetricsEndpoint("127.0.0.1", 0, registry)
    try:
        first = ask(served, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        second = ask(served, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    finally:
        served.close()

    assert first.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
    assert b"scrape again" in first
    assert second.startswith(b"HTTP/1.1 200 OK\r\n")
