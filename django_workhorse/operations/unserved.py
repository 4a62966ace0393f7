"""Queues that no live worker serves, said where people look.

A job on a queue no worker serves waits forever, and nothing about the job
itself is wrong: a mistyped ``.options(queue="emial")``, a queue only a job
found by its import path uses, a worker started with ``--queues`` that leaves
one out. The live workers say which queues they serve in their heartbeats
(``workhorse_worker.info["queues"]``), so the job page, the queues page,
``workhorse_status`` and a starting worker compare a job's queue with those,
and name the served queues that look like it (a typo's likely target).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Collection, Iterable, Mapping
from typing import Any

CLOSE_RATIO = 0.75
"""difflib's ratio from which a served queue is named as the one meant."""

WAITING_STATES = ("blocked", "scheduled", "ready")
"""The states of a job that waits for a worker to claim it (an active one has one)."""

SILENT_AFTER_TURNS = 3
"""A worker whose heartbeat is this many of the intervals it describes
itself at (``info["renew_interval"]``: its renew interval while it runs
jobs, a minute while idle) and 5 s overdue is silent: it serves nothing (as
the workers view reads it)."""


def close_matches(queue: str, names: Iterable[str]) -> list[str]:
    """Up to three of ``names`` that look like ``queue``, the closest first:
    what a typo of ``queue`` meant. difflib's ratio of 0.75 or more: a
    swapped or missing letter in a short name ("emial", "email") passes,
    a shared prefix alone ("app-email", "app-default") does not."""
    return difflib.get_close_matches(
        queue, [n for n in names if n != queue], n=3, cutoff=CLOSE_RATIO
    )


def served_queues(workers: Iterable[Any]) -> set[str]:
    """The queues the live, not silent, workers of ``workers`` serve
    (``Admin.live_workers`` rows)."""
    return {q for w in workers if not w.silent for q in w.queues}


def served_by_rows(rows: Iterable[Mapping[str, Any]]) -> set[str]:
    """``served_queues`` of raw ``workhorse_list_workers_v1`` rows, for a
    worker that reads them on its own connection."""
    served: set[str] = set()
    for row in rows:
        info = row.get("info")
        if isinstance(info, str):
            try:
                info = json.loads(info)
            except ValueError:
                continue
        if not isinstance(info, dict):
            continue
        interval = info.get("renew_interval")
        interval = float(interval) if isinstance(interval, int | float) else 15.0
        ago = row.get("seen_seconds_ago")
        if not isinstance(ago, int | float) or ago > SILENT_AFTER_TURNS * interval + 5:
            continue
        queues = info.get("queues")
        if isinstance(queues, dict):
            served.update(q for q in queues if isinstance(q, str))
    return served


def unserved_note(queue: str, served: Collection[str]) -> str | None:
    """What an operator reads of ``queue`` when no live worker serves it
    (None when one does): the queues that are served, and those of them
    that look like ``queue``."""
    if queue in served:
        return None
    if not served:
        return (
            f"no worker serves queue {queue!r}: no live worker is connected to this "
            "database; its jobs wait until one that serves the queue starts"
        )
    note = f"no worker serves queue {queue!r}; workers serve: {', '.join(sorted(served))}"
    close = close_matches(queue, served)
    if close:
        note += f" (did you mean {' or '.join(repr(c) for c in close)}?)"
    return note


def unserved_ready(
    depth: Iterable[tuple[str, str, int]], served: Collection[str]
) -> dict[str, int]:
    """Ready jobs by queue, of the queues not in ``served``
    (``store.queue_depth`` rows), in queue order."""
    found: dict[str, int] = {}
    for queue, state, jobs in depth:
        if state == "ready" and jobs and queue not in served:
            found[queue] = found.get(queue, 0) + int(jobs)
    return dict(sorted(found.items()))
