"""Job annotations on every log record written while a handler runs.

A record factory (not a filter) so that records from any logger, with any
handler, carry ``workhorse_job_id``, ``workhorse_queue`` and
``workhorse_attempt``. The worker's own records about a job carry the same
attributes through ``extra``; other records have none of them.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from ..context import peek_current

if TYPE_CHECKING:
    from .execution import Finished, Running

logger = logging.getLogger("django_workhorse.worker")

_installed = False
_lock = threading.Lock()


def install_record_factory() -> None:
    """Wrap the current log record factory once per process."""
    global _installed
    with _lock:
        if _installed:
            return
        _install()
        _installed = True


def _install() -> None:
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        context = peek_current()
        if context is not None:
            record.workhorse_job_id = context.job_id
            record.workhorse_queue = context.queue
            record.workhorse_attempt = context.attempt
            record.workhorse_name = context.name
            record.workhorse_worker_id = context.worker_id
        return record

    logging.setLogRecordFactory(factory)


def use_log_format(log_format: str, worker_id: str) -> None:
    """``WORKHORSE["LOG_FORMAT"]``: "json" formats the worker's log lines as JSON."""
    if log_format == "json":
        from ..operations.logformat import use_json

        use_json(worker_id)


def job_extra(
    job_id: int, queue: str, attempt: int | None, name: str | None = None
) -> dict[str, object]:
    """``extra=`` for the worker's own records about a job; ``name`` is given
    wherever the job's name is known, so JSON lines carry ``job_name``.
    ``attempt`` is None for a job that has not run yet (just enqueued)."""
    extra: dict[str, object] = {
        "workhorse_job_id": job_id,
        "workhorse_queue": queue,
    }
    if attempt is not None:
        extra["workhorse_attempt"] = attempt
    if name is not None:
        extra["workhorse_name"] = name
    return extra


def _logged_here(running: Running) -> bool:
    """Whether the worker logs this run's start and success at INFO: not a
    Django task's, whose start and end Django's ``django.tasks`` logger
    writes already (one line per event, however ``LOGGING`` is set)."""
    definition = running.definition
    return logger.isEnabledFor(logging.INFO) and not (
        definition is not None and definition.runs_logged_elsewhere
    )


def _extra(running: Running) -> dict[str, Any] | None:
    """The job's annotations, unless the record factory adds them already
    (an async run ends in its job's context): ``extra`` may not repeat them."""
    if peek_current() is not None:
        return None
    job = running.job
    return job_extra(job.job_id, job.queue, job.attempt, job.name)


def log_start(running: Running) -> None:
    """INFO (``runworker -v 2``): a job's attempt starts."""
    if not _logged_here(running):
        return
    job = running.job
    logger.info(
        "job %s %s #%s attempt %s/%s started",
        job.name,
        job.queue,
        job.job_id,
        job.attempt,
        job.max_attempts,
        extra=_extra(running),
    )


def log_success(item: Finished) -> None:
    """INFO (``runworker -v 2``): a job's attempt returned. Failures are
    logged when they are recorded (a warning, or an error when terminal)."""
    if not item.ok or not _logged_here(item.running):
        return
    job = item.running.job
    logger.info(
        "job %s %s #%s succeeded in %.3f s",
        job.name,
        job.queue,
        job.job_id,
        time.monotonic() - item.running.started,
        extra=_extra(item.running),
    )
