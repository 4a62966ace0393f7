"""The jobs django-workhorse runs for itself: each filter-wide operator
action ("retry all", "cancel all") is a job on the queue ``workhorse.operator``.

Imported at start-up like every installed app's ``jobs.py``, so every worker
of ``WORKHORSE['DATABASE']`` knows it and serves the queue unless told not to
(``runworker --exclude-queues workhorse.operator``; ``--queues
workhorse.operator`` for a worker of its own; docs/admin.md).
"""

from __future__ import annotations

from typing import Any

from .context import current_job
from .core.definitions import job
from .exceptions import JobCanceledError
from .operations import bulk_actions


@job(
    name=bulk_actions.BULK_ACTION_JOB,
    queue=bulk_actions.OPERATOR_QUEUE,
    max_attempts=20,
    # A worker killed mid-action stalls the job; the next run goes on.
    max_stalled=20,
)
def run_bulk_action(action_id: int, store: str) -> dict[str, Any]:
    """Walk action ``action_id`` of database alias ``store`` to its end.

    Each step is checkpointed (``step-1``, ``step-2``, ...): a run after a
    crash replays the steps recorded and goes on with the next one, which
    continues from the position the action's record holds. That record is
    moved in the same transaction as the batch it counts, so a batch that
    committed before its checkpoint was written is never acted on again: the
    next step starts below it."""
    ctx = current_job()
    number = 0
    try:
        while True:
            number += 1
            progress: dict[str, Any] = ctx.checkpoint(
                f"step-{number}", lambda: bulk_actions.step(store, action_id, ctx.job_id)
            )
            if progress["status"] in (*bulk_actions.ENDED, "gone"):
                return progress
    except JobCanceledError:
        # The job itself was canceled: the action stops with it, so that its
        # record does not stay "running" and hold its filter.
        bulk_actions.stop(store, action_id, "the action's job was canceled")
        bulk_actions.step(store, action_id, ctx.job_id)
        raise
