"""A logging handler that stores ``jobtests`` log records in ``CapturedLog``.

Installed on the ``jobtests`` logger when ``jobtests.jobs`` is imported, so a
worker process writes, for every record its handlers log, the attributes the
worker attached (``workhorse_job_id``, ``workhorse_queue``,
``workhorse_attempt``), or NULL where one is missing.
"""

from __future__ import annotations

import logging
import os


class TableHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        from .models import CapturedLog

        try:
            CapturedLog.objects.create(
                logger=record.name,
                level=record.levelname,
                message=record.getMessage(),
                pid=os.getpid(),
                workhorse_job_id=getattr(record, "workhorse_job_id", None),
                workhorse_queue=getattr(record, "workhorse_queue", None),
                workhorse_attempt=getattr(record, "workhorse_attempt", None),
            )
        except Exception:
            self.handleError(record)


def install() -> None:
    """Attach one TableHandler to the ``jobtests`` logger (idempotent)."""
    logger = logging.getLogger("jobtests")
    if not any(isinstance(h, TableHandler) for h in logger.handlers):
        logger.addHandler(TableHandler(level=logging.DEBUG))
    logger.setLevel(logging.DEBUG)
