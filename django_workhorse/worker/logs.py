"""Job annotations on every log record written while a handler runs.

A record factory (not a filter) so that records from any logger, with any
handler, carry ``workhorse_job_id``, ``workhorse_queue`` and
``workhorse_attempt``. The worker's own records about a job carry the same
attributes through ``extra``; other records have none of them.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ..context import peek_current

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
        from ..logformat import use_json

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
