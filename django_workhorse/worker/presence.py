"""What a worker says of itself to the workers view.

The heartbeat sends it with its renewal call (``workhorse_heartbeat_many_v1``'s
``p_worker_info``), which records it in ``workhorse_worker`` with the
database's time: operators see who runs, where, on which queues and how busy,
without a call of its own on any path (docs/admin.md, "Workers").
"""

from __future__ import annotations

import os
import socket
from functools import cache
from importlib import metadata
from typing import Any

IDLE_DESCRIBE_INTERVAL = 60.0
"""How often a worker with nothing running says it is there (unless what it
says changes): its liveness pulse proves it alive in between
(docs/worker.md#liveness), and an idle fleet of a thousand workers costs the
database 17 writes a second, not 67."""


def describe_every(busy: int, renew_interval: float) -> float:
    """How often a worker sends its description: at each renewal turn while
    it runs jobs, every ``IDLE_DESCRIBE_INTERVAL`` while it has none."""
    return renew_interval if busy else max(renew_interval, IDLE_DESCRIBE_INTERVAL)


@cache
def package_version() -> str:
    """The installed django-workhorse's version ("unknown" outside a distribution)."""
    try:
        return metadata.version("django-workhorse")
    except metadata.PackageNotFoundError:
        return "unknown"


def describe_worker(
    worker_id: str,
    concurrency: dict[str, int],
    busy: int,
    renew_interval: float,
    success_route: str,
) -> dict[str, Any]:
    """The ``info`` of this worker's ``workhorse_worker`` row: its id, host,
    pid, queues with their slots, slots in use, version, the route its
    successes take to the database (``SuccessRoute.label``), and how often it
    sends this (the view calls a worker silent after a few missed turns)."""
    return {
        "worker_id": worker_id,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "queues": dict(concurrency),
        "slots": sum(concurrency.values()),
        "busy": busy,
        "version": package_version(),
        "success_route": success_route,
        "renew_interval": renew_interval,
    }
