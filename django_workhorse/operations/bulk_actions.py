"""Filter-wide actions ("retry all", "cancel all") that run as jobs.

Asking for one writes a record (``workhorse_bulk_request_v1``) and enqueues
one job, ``workhorse.bulk_action``, on the internal queue
``workhorse.operator`` (``django_workhorse/jobs.py``). That job calls
``step`` until the action ends: each step is one transaction of at most
``batch_size`` jobs that moves the record's position and counts with them,
and the job records each step's progress with ``ctx.checkpoint``, so a run
that recovers the job after a crash replays the steps done and goes on from
the position the last committed batch left (docs/admin.md).

This module holds what the record looks like to Python and the calls the
job and ``Admin`` make; it knows neither the worker nor the admin pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connections, transaction

from ..db import store

OPERATOR_QUEUE = "workhorse.operator"
"""The queue of the jobs that run operator actions. Every worker of
``WORKHORSE['DATABASE']`` serves it unless ``--exclude-queues`` leaves it out;
``runworker --queues workhorse.operator`` gives it a worker of its own."""

BULK_ACTION_JOB = "workhorse.bulk_action"
"""The name of the job that runs one filter-wide action."""

ACTION_STATES = {
    "retry": ("failed", "canceled"),
    "cancel": ("blocked", "scheduled", "ready", "active"),
}
"""The states each action can change, walked in this order."""

ENDED = ("finished", "canceled")
"""The statuses of an action that ended."""


@dataclass(frozen=True)
class BulkAction:
    """The record of one filter-wide action, as last read."""

    id: int
    action: str
    """``retry`` or ``cancel``."""
    status: str
    """``queued`` (its job has not started), ``running``, ``finished`` or
    ``canceled`` (an operator stopped it; the jobs acted on stay so)."""
    queue: str | None
    name: str | None
    state: str | None
    created_after: datetime | None
    created_before: datetime | None
    states: list[str]
    """The states it walks, in order."""
    reason: str | None
    requested_by: str | None
    """Who asked (the Django admin: the user's username)."""
    permission: str | None
    """How the asker's right to act was established when asked (the Django
    admin: the permission it checked, ``django_workhorse.change_job``)."""
    requested_at: datetime
    bound_id: int
    """The newest job when it was asked for: no job after it is touched."""
    batch_size: int
    job_id: int | None
    """The ``workhorse.bulk_action`` job running it (in ``WORKHORSE['DATABASE']``)."""
    total: int | None
    """Jobs matching when it started (None before); once finished, those it walked."""
    matched: int
    """Jobs walked so far: changed + requested + skipped."""
    changed: int
    """Jobs retried, or canceled at once."""
    requested: int
    """Running jobs whose workers were asked to cancel them."""
    skipped: int
    """Jobs whose state no longer allowed the action when their batch came."""
    batches: int
    started_at: datetime | None
    progressed_at: datetime | None
    """When the last batch committed."""
    finished_at: datetime | None
    cancel_requested_at: datetime | None
    canceled_by: str | None
    read_at: datetime
    """The database's time when this record was read."""
    using: str = "default"
    """The store whose jobs it acts on."""
    inserted: bool = True
    """From ``Admin.start_bulk``: False when the same action on the same filter
    was already queued or running, and this is that one (nothing new was asked)."""

    @property
    def running(self) -> bool:
        """Queued or running: not ended yet."""
        return self.status not in ENDED

    @property
    def rate(self) -> float | None:
        """Jobs walked per second since it started, or None before a batch."""
        if self.started_at is None or self.progressed_at is None or not self.matched:
            return None
        seconds = (self.progressed_at - self.started_at).total_seconds()
        return self.matched / seconds if seconds > 0 else None

    @property
    def seconds_left(self) -> float | None:
        """At the rate so far, the time the jobs still to walk take; None when
        not running or not known yet."""
        rate = self.rate
        if not self.running or rate is None or self.total is None:
            return None
        return max(self.total - self.matched, 0) / rate

    @property
    def filter_text(self) -> str:
        """The filter in words: ``queue email, state failed`` or ``every job``."""
        parts = [
            f"{key} {value.isoformat() if isinstance(value, datetime) else value}"
            for key, value in (
                ("queue", self.queue),
                ("name", self.name),
                ("state", self.state),
                ("created after", self.created_after),
                ("created before", self.created_before),
            )
            if value is not None
        ]
        return ", ".join(parts) or "every job"


def from_row(row: dict[str, Any], using: str, inserted: bool = True) -> BulkAction:
    """A record as ``BulkAction``; columns it does not name are left out."""
    fields = BulkAction.__dataclass_fields__
    values = {key: value for key, value in row.items() if key in fields}
    values["states"] = list(values["states"])
    return BulkAction(**values, using=using, inserted=inserted)


def step(using: str, action_id: int, job_id: int | None) -> dict[str, Any]:
    """One step of the action, in a transaction of its own: what the job
    records as the step's checkpoint (JSON: its status and counts).
    ``status`` is ``gone`` when no such action is left."""
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        row = store.bulk_step(cursor, action_id, job_id)
    if row is None:
        return {"status": "gone"}
    return {
        key: row[key]
        for key in (
            "status",
            "phase",
            "position",
            "total",
            "matched",
            "changed",
            "requested",
            "skipped",
            "batches",
        )
    }


def stop(using: str, action_id: int, by: str | None) -> tuple[str, str | None]:
    """Ask the action to stop after its current batch: ``(status, state)`` of
    ``workhorse_bulk_cancel_v1``."""
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        return store.bulk_cancel(cursor, action_id, by)
