"""``make demo`` runs ``manage.py demo``: it migrates, enqueues the sample
jobs, runs two worker processes and serves the admin until it is stopped.
Stopped with SIGTERM (what ``make`` sends its command when it is stopped) as
with Ctrl-C, it takes its workers and the admin server down with it."""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.acceptance.conftest import (
    FAST_COMMITS,
    WorkerProcess,
    children_of,
    database_url,
)

pytestmark = pytest.mark.django_db(transaction=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(check, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {seconds} s")
        time.sleep(0.2)


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for child in children_of(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting for its parent does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def test_sigterm_stops_the_demo_with_its_workers_and_admin_server(tmp_path):
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(**FAST_COMMITS),
        "DJANGO_SETTINGS_MODULE": "testproject.settings",
        "PYTHONUNBUFFERED": "1",
    }
    argv = [sys.executable, "manage.py", "demo", "--port", str(port)]
    demo = WorkerProcess("demo", argv, env, tmp_path)
    try:
        wait_for(lambda: "admin: http://" in demo.stdout_path.read_text(), 120, "admin line")
        login = f"http://127.0.0.1:{port}/admin/login/"
        wait_for(lambda: answers(login), 30, "admin login page")
        output = demo.stdout_path.read_text()
        assert "succeeded" in output and "failed" in output, output
        started = descendants(demo.pid)
        assert len(started) >= 4, started  # the supervisor, its two workers, the server

        os.kill(demo.pid, signal.SIGTERM)
        demo.proc.wait(60)
        wait_for(lambda: not any(map(alive, started)), 60, "end of the demo's processes")
        assert not answers(login)
    finally:
        demo.kill_group()
