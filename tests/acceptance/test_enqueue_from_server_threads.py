"""A third-party package's task (testproject/searchlib, shaped like Wagtail's
``modelsearch``) enqueues from the threads real servers run code in: a
handler thread of ``runworker``, and a request thread of Django's threaded
``runserver``. (The plain-thread, ASGI and override cases are in
tests/integration/test_enqueue_from_any_thread.py.)"""

from __future__ import annotations

import json
import os
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import pytest
from jobtests.tasks import indexes_later

from django_workhorse import Admin
from django_workhorse.tasks.compat import TaskResultStatus
from tests.acceptance.conftest import TESTPROJECT, WorkerProcess, database_url

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


def test_a_handler_thread_of_runworker_enqueues_a_third_party_task(start_worker, wait_until):
    result = indexes_later.enqueue(5)
    worker = start_worker("--queues", "jobtests.tasks")

    def finished() -> Any:
        result.refresh()
        return result if result.is_finished else None

    wait_until(finished, timeout=30, what="the task that enqueues another finished")
    assert worker.stop() == 0
    assert result.status == TaskResultStatus.SUCCESSFUL, result.errors
    enqueued = Admin().get_job(int(result.return_value))
    assert enqueued is not None
    assert (enqueued.name, enqueued.payload["args"]) == ("searchlib.tasks.index_object", [5])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def post(url: str, data: dict[str, str]) -> tuple[int, str]:
    body = urllib.parse.urlencode(data).encode()
    try:
        with urllib.request.urlopen(url, data=body, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def test_a_view_on_the_threaded_runserver_enqueues_a_third_party_task(workers, wait_until):
    """``runserver`` answers each request in a thread of its own (threaded by default)."""
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(TESTPROJECT.parent), os.environ.get("PYTHONPATH")])
        ),
        "DATABASE_URL": database_url(),
        "DJANGO_SETTINGS_MODULE": "testproject.settings",
        "PYTHONUNBUFFERED": "1",
    }
    argv = [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
    server = WorkerProcess("runserver", argv, env, workers.log_dir)
    workers.started.append(server)  # killed at teardown if the test fails first
    url = f"http://127.0.0.1:{port}/jobtests/enqueue-index"

    def answered() -> Any:
        assert server.alive(), server.stderr
        try:
            return post(url, {"pk": "11"})
        except (ConnectionError, urllib.error.URLError):
            return None

    status, body = wait_until(answered, timeout=30, what="runserver answered the POST")
    assert status == 200, body
    job = Admin().get_job(int(json.loads(body)["id"]))
    assert job is not None
    assert (job.name, job.payload["args"]) == ("searchlib.tasks.index_object", [11])
    server.kill()
