"""Canceled jobs: the ``ON_JOB_CANCELED`` call, and the jobs the stall
recovery ended canceled. A run's own cancel is reported by ``report.py``.

A run ends canceled when an operator's cancel reaches its worker (the
ledger acks it at once), when its handler raises ``JobCanceledError``, or when
its job was flagged and its worker released it at shutdown or died. A cancel
is not a failure: ``ON_JOB_FAILURE`` is not called for it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..core.hooks import JobCancel
from ..db import store
from ..db.store import Recovered
from .logs import job_extra

logger = logging.getLogger("django_workhorse.worker")


def log_recovered_cancel(item: Recovered) -> None:
    logger.warning(
        "job %s %s #%s canceled: its cancel was requested and its worker stopped renewing "
        "the lease before it stopped the job",
        item.name,
        item.queue,
        item.job_id,
        extra=job_extra(item.job_id, item.queue, item.attempt, item.name),
    )


def call_cancel_hook(hook: Callable[[JobCancel], object] | None, canceled: JobCancel) -> None:
    """Tell ``ON_JOB_CANCELED`` about a recorded cancel; a hook that raises is
    logged and processing goes on."""
    if hook is None:
        return
    try:
        hook(canceled)
    except BaseException:  # user code: a sys.exit() in a hook must not stop the worker
        logger.exception(
            "workhorse: on_job_canceled hook raised for job %s; processing goes on",
            canceled.job_id,
            extra=job_extra(canceled.job_id, canceled.queue, canceled.attempt, canceled.name),
        )


def of_recovered(item: Recovered, reason: str | None) -> JobCancel:
    return JobCancel(item.job_id, item.name, item.queue, item.attempt, item.max_attempts, reason)


def stored_reason(cursor: store.Cursor, job_id: int) -> str | None:
    """The operator's reason recorded in a canceled job's envelope, if any:
    the paths that end a flagged job canceled in SQL (a release, a sleep, a
    stall recovery) do not hand it back."""
    snapshot = store.get_job(cursor, job_id) or {}
    error = snapshot.get("error")
    reason = error.get("reason") if isinstance(error, dict) else None
    return reason if isinstance(reason, str) else None
