"""An in-process ``Worker`` against the test database, with real threads.

``start_worker({"queue": slots}, SETTING=value, ...)`` (``on_job_failure=``
the dotted path of a hook, as ``runworker`` passes it) builds a Worker the way
``runworker`` does (minus the registry checks of ``resolve_options``) and
runs it on a thread of the test process; the test can then look at its
ledger, its logs (``caplog``) and the database while it works. Every worker
is stopped at teardown.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from django_workhorse.core.conf import get_settings
from django_workhorse.worker.options import WorkerOptions, make_worker_id
from django_workhorse.worker.worker import Worker
from tests.helpers import poll_until
from tests.worker import jobs

IN_PROCESS = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


class RunningWorker:
    """A Worker running on a thread of the test process."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.exit_code: int | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="test-worker", daemon=True)

    def _run(self) -> None:
        try:
            self.exit_code = self.worker.run()
        except BaseException as exc:  # reported by stop()
            self.error = exc

    @property
    def ledger(self):
        return self.worker.ledger

    def stop(self, timeout: float = 30.0) -> int | None:
        """Stop gracefully (unless the test began it) and wait; fails the
        test if the worker does not end."""
        if not self.worker._stopping.is_set():
            self.worker.request_stop()
        self.thread.join(timeout)
        if self.thread.is_alive():
            self.worker.request_stop()  # the second call forces
            self.thread.join(10)
            pytest.fail("the in-process worker did not stop within its grace period")
        if self.error is not None:
            raise self.error
        return self.exit_code


@pytest.fixture
def start_worker(transactional_db) -> Iterator[Callable[..., RunningWorker]]:
    started: list[RunningWorker] = []

    def start(
        concurrency: dict[str, int], *, on_job_failure: str | None = None, **settings: Any
    ) -> RunningWorker:
        options = WorkerOptions(
            alias="default",
            queues=list(concurrency),
            concurrency=dict(concurrency),
            worker_id=make_worker_id("inproc"),
            settings=get_settings({"SHUTDOWN_GRACE": 5, **settings}),
            on_job_failure=on_job_failure,
        )
        running = RunningWorker(Worker(options))
        running.thread.start()
        started.append(running)
        poll_until(
            lambda: running.worker._heartbeat is not None or running.error,
            timeout=30,
            interval=0.01,
            what="the in-process worker to start",
        )
        return running

    yield start
    for name in list(jobs._gates):
        jobs.gate(name).set()
    for running in started:
        if running.thread.is_alive():
            running.worker.request_stop()
            running.worker.request_stop()
            running.thread.join(15)
