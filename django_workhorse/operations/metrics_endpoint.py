"""The HTTP endpoint of ``runworker --metrics-port``: one thread, bounded.

prometheus-client's own server starts a thread per connection and never
times a request out, so each idle or half-sent request holds a thread for
as long as its client likes (200 held connections took a worker from 12 to
207 threads). This one serves every connection from a single thread with a
selector: a connection costs a file descriptor until its answer is
written, and no thread at all.

- **Read timeout**: a connection must send its whole request within
  READ_TIMEOUT seconds of being accepted, or it is closed (a client that
  trickles a byte at a time gains nothing).
- **Bounded connections**: at most MAX_CONNECTIONS are open at once; when
  one more arrives the one that has waited longest is closed, so a scrape
  gets its answer however many idle connections are held.
- **Bounded requests**: a request head over MAX_REQUEST_BYTES is answered
  431 and closed.
- **Unblocked answers**: an answer is written as the client's socket takes
  it, between the other connections' turns, and a connection whose answer
  is not taken whole within WRITE_TIMEOUT seconds is closed; so a client
  that asks and never reads holds up no one else's answer.

Each answer closes its connection once written (``Connection: close``);
``GET /metrics`` (or ``/``) gets the text exposition format, ``HEAD`` its
headers, any other path 404 and any other method 405.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
import time
from typing import Any

logger = logging.getLogger("django_workhorse.worker")

READ_TIMEOUT = 10.0
"""Seconds a connection has to send its whole request head."""
WRITE_TIMEOUT = 10.0
"""Seconds a client has to take its whole answer."""
MAX_CONNECTIONS = 64
"""Connections held open at once; the oldest is closed for a new one."""
MAX_REQUEST_BYTES = 8192
"""The longest request head read (a scrape's is a few hundred bytes)."""


class _Connection:
    __slots__ = ("buffer", "deadline", "out", "sock")

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline
        self.buffer = bytearray()
        self.out: memoryview | None = None
        """What is left to write of the answer, once there is one."""


class MetricsEndpoint:
    """Serves ``registry`` (a prometheus-client registry) on ``addr:port``
    from one daemon thread, until ``close()``. Listening starts in the
    constructor, so a bad address or a port in use raises OSError there."""

    def __init__(
        self,
        addr: str,
        port: int,
        registry: Any,
        *,
        read_timeout: float = READ_TIMEOUT,
        write_timeout: float = WRITE_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.registry = registry
        self.read_timeout = read_timeout
        self.write_timeout = write_timeout
        self.max_connections = max_connections
        family, _, _, _, sockaddr = socket.getaddrinfo(
            addr, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        self.listener = socket.create_server(sockaddr[:2], family=family, backlog=128)
        self.listener.setblocking(False)
        self.address: tuple[str, int] = self.listener.getsockname()[:2]
        """The address and port listened on (the port chosen, for port 0)."""
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.listener, selectors.EVENT_READ, None)
        # In accept order, so the first is the one that has waited longest.
        self._open: dict[socket.socket, _Connection] = {}
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._serve, name="workhorse-metrics-endpoint", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving and close every connection (waits for the thread)."""
        self._stopping.set()
        self._thread.join(timeout=5)

    def _serve(self) -> None:
        try:
            while not self._stopping.is_set():
                events = self._selector.select(timeout=0.5)
                now = time.monotonic()
                for key, mask in events:
                    if key.data is None:
                        self._accept(now)
                    elif mask & selectors.EVENT_WRITE:
                        self._write(key.data)
                    else:
                        self._read(key.data)
                for conn in [c for c in self._open.values() if c.deadline <= now]:
                    self._drop(conn)
        except Exception:  # pragma: no cover - a bug here must not pass unseen
            logger.exception("workhorse: the metrics endpoint stopped")
        finally:
            for conn in list(self._open.values()):
                self._drop(conn)
            self._selector.close()
            self.listener.close()

    def _accept(self, now: float) -> None:
        for _ in range(self.max_connections):
            try:
                sock, _peer = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of file descriptors, say: try again later
                logger.warning("workhorse: the metrics endpoint cannot accept: %s", exc)
                return
            if len(self._open) >= self.max_connections:
                self._drop(next(iter(self._open.values())))
            sock.setblocking(False)
            conn = _Connection(sock, now + self.read_timeout)
            self._open[sock] = conn
            self._selector.register(sock, selectors.EVENT_READ, conn)

    def _read(self, conn: _Connection) -> None:
        if conn.sock not in self._open:  # dropped for a newer one in this round
            return
        try:
            chunk = conn.sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(conn)
            return
        conn.buffer += chunk
        end = conn.buffer.find(b"\r\n\r\n")
        if end < 0 and len(conn.buffer) > MAX_REQUEST_BYTES:
            self._answer(conn, "431 Request Header Fields Too Large", b"request too large\n")
        elif end >= 0:
            self._respond(conn, bytes(conn.buffer[:end]))

    def _respond(self, conn: _Connection, head: bytes) -> None:
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = request_line.split()
        method, target = (parts[0], parts[1]) if len(parts) == 3 else ("", "")
        path = target.split("?", 1)[0]
        if method not in ("GET", "HEAD"):
            self._answer(conn, "405 Method Not Allowed", b"use GET\n", allow=True)
        elif path not in ("/metrics", "/"):
            self._answer(conn, "404 Not Found", b"the metrics are at /metrics\n")
        else:
            from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

            try:
                body = generate_latest(self.registry)
            except Exception as exc:
                # Such as a worker process's metrics file read while the
                # process was creating it (multiprocess mode): this scrape
                # fails, the endpoint goes on, and the next scrape reads it.
                logger.warning("workhorse: the metrics could not be read for a scrape: %r", exc)
                self._answer(
                    conn,
                    "503 Service Unavailable",
                    f"the metrics could not be read this time ({exc!r}); scrape again\n".encode(),
                )
                return
            self._answer(conn, "200 OK", body, CONTENT_TYPE_LATEST, head_only=method == "HEAD")

    def _answer(
        self,
        conn: _Connection,
        status: str,
        body: bytes,
        content_type: str = "text/plain; charset=utf-8",
        *,
        head_only: bool = False,
        allow: bool = False,
    ) -> None:
        lines = [f"HTTP/1.1 {status}", f"Content-Type: {content_type}"]
        lines += [f"Content-Length: {len(body)}", "Connection: close"]
        if allow:
            lines.append("Allow: GET, HEAD")
        headers = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        conn.out = memoryview(headers if head_only else headers + body)
        conn.deadline = time.monotonic() + self.write_timeout
        self._selector.modify(conn.sock, selectors.EVENT_WRITE, conn)
        self._write(conn)

    def _write(self, conn: _Connection) -> None:
        """Write what the client's socket takes now; close once all is written."""
        if conn.sock not in self._open or conn.out is None:
            return
        try:
            sent = conn.sock.send(conn.out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(conn)
            return
        conn.out = conn.out[sent:]
        if not conn.out:
            self._drop(conn)

    def _drop(self, conn: _Connection) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn.sock)
        self._forget(conn)

    def _forget(self, conn: _Connection) -> None:
        self._open.pop(conn.sock, None)
        with contextlib.suppress(OSError):
            conn.sock.close()
