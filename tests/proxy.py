"""A TCP relay to PostgreSQL that a test can take away, as if the server were gone.

Workers connect through it; ``close()`` shuts every relayed connection and the
listening socket, so their sessions end and every new connection is refused,
while the shared server itself runs on untouched.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class Relay:
    """Relays 127.0.0.1:``port`` to ``(host, upstream_port)`` until ``close()``."""

    def __init__(self, host: str, upstream_port: int) -> None:
        self._upstream = (host, upstream_port)
        self._lock = threading.Lock()
        self.port = 0
        self.reopen()

    def reopen(self) -> None:
        """Relay again on the same port (after ``close()``): the server is back."""
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self.port = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, args=(self._listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self._upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._closed:
                    client.close()
                    server.close()
                    return
                self._sockets += [client, server]
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                target.sendall(data)
        for sock in (source, target):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """End every relayed connection and refuse new ones."""
        with self._lock:
            self._closed = True
            sockets, self._sockets = self._sockets, []
        self._listener.close()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
