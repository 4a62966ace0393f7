"""django-workhorse: a durable job queue for Django on PostgreSQL alone.

Everything a user calls is importable from here::

    import django_workhorse as workhorse

    @workhorse.job(queue="email", max_attempts=5, timeout=60)
    def send_invoice(invoice_id: int) -> dict: ...

    send_invoice.enqueue(invoice_id=42)      # in the caller's transaction
    workhorse.Admin().get_job(handle.id)
"""

from .admin_api import (
    ActionResult,
    Admin,
    JobRow,
    JobSnapshot,
    Page,
    QueueStats,
    TimelineEntry,
)
from .backoff import exponential, fixed
from .context import JobContext, current_job
from .definitions import BoundJob, JobDefinition, JobHandle, enqueue, job
from .exceptions import (
    InvalidCursorError,
    InvalidJobOptionError,
    InvalidPayloadError,
    InvalidQueryError,
    JobAlreadyRegistered,
    JobCancelled,
    NotInJobError,
    SchemaVersionError,
    StoreMismatchError,
    UnknownJobError,
    WorkhorseError,
)

__all__ = [
    "ActionResult",
    "Admin",
    "BoundJob",
    "InvalidCursorError",
    "InvalidJobOptionError",
    "InvalidPayloadError",
    "InvalidQueryError",
    "JobAlreadyRegistered",
    "JobCancelled",
    "JobContext",
    "JobDefinition",
    "JobHandle",
    "JobRow",
    "JobSnapshot",
    "NotInJobError",
    "Page",
    "QueueStats",
    "SchemaVersionError",
    "StoreMismatchError",
    "TimelineEntry",
    "UnknownJobError",
    "WorkhorseError",
    "current_job",
    "enqueue",
    "exponential",
    "fixed",
    "job",
]
