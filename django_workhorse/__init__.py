"""django-workhorse: a durable job queue for Django on PostgreSQL alone.

Everything a user calls is importable from here::

    import django_workhorse as workhorse

    @workhorse.job(queue="email", max_attempts=5, timeout=60)
    def send_invoice(invoice_id: int) -> dict: ...

    handle = send_invoice.enqueue(invoice_id=42)   # in the caller's transaction
    handle.refresh().status                 # 'ready', ..., 'succeeded'
"""

from .admin_api import (
    ActionResult,
    Admin,
    Checkpoint,
    JobRow,
    JobSnapshot,
    Page,
    QueueStats,
    TimelineEntry,
)
from .backoff import exponential, fixed
from .context import JobContext, current_job
from .definitions import BoundJob, JobDefinition, aenqueue, enqueue, job
from .exceptions import (
    DuplicateCheckpointError,
    InvalidCheckpointError,
    InvalidCursorError,
    InvalidJobOptionError,
    InvalidPayloadError,
    InvalidQueryError,
    InvalidQueueLimitError,
    JobAlreadyRegistered,
    JobCancelled,
    JobNotFoundError,
    NotInJobError,
    SchemaVersionError,
    StoreMismatchError,
    UnknownJobError,
    UnknownQueueError,
    UnknownScheduleError,
    WorkhorseError,
)
from .handles import JobHandle

__all__ = [
    "ActionResult",
    "Admin",
    "BoundJob",
    "Checkpoint",
    "DuplicateCheckpointError",
    "InvalidCheckpointError",
    "InvalidCursorError",
    "InvalidJobOptionError",
    "InvalidPayloadError",
    "InvalidQueryError",
    "InvalidQueueLimitError",
    "JobAlreadyRegistered",
    "JobCancelled",
    "JobContext",
    "JobDefinition",
    "JobHandle",
    "JobNotFoundError",
    "JobRow",
    "JobSnapshot",
    "NotInJobError",
    "Page",
    "QueueStats",
    "SchemaVersionError",
    "StoreMismatchError",
    "TimelineEntry",
    "UnknownJobError",
    "UnknownQueueError",
    "UnknownScheduleError",
    "WorkhorseError",
    "aenqueue",
    "current_job",
    "enqueue",
    "exponential",
    "fixed",
    "job",
]
