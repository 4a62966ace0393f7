"""django-workhorse: a durable job queue for Django on PostgreSQL alone.

Everything a user calls is importable from here::

    import django_workhorse as workhorse

    @workhorse.job(queue="email", max_attempts=5, timeout=60)
    def send_invoice(invoice_id: int) -> dict: ...

    handle = send_invoice.enqueue(invoice_id=42)   # in the caller's transaction
    handle.refresh().status                 # 'ready', ..., 'succeeded'
"""

from . import installed_check  # noqa: F401  (registers workhorse.E103 / E009)
from .admin_api import (
    ActionResult,
    Admin,
    BulkOutcome,
    Checkpoint,
    FailureGroup,
    JobDependency,
    JobRow,
    JobSnapshot,
    Page,
    QueueStats,
    TimelineEntry,
    WorkerInfo,
)
from .backoff import exponential, fixed
from .bulk_actions import BulkAction
from .context import JobContext, current_job
from .definitions import (
    AsyncJobDefinition,
    BoundJob,
    JobDecorator,
    JobDefinition,
    aenqueue,
    enqueue,
    job,
)
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
    JobTimeout,
    NotInJobError,
    ReadOnlyModelError,
    SchemaVersionError,
    StalledJobError,
    StoreMismatchError,
    UnknownDependencyError,
    UnknownJobError,
    UnknownQueueError,
    UnknownScheduleError,
    WorkhorseError,
)
from .handles import JobHandle
from .hooks import JobCancel, JobFailure, deprecated_name
from .job_options import JobOptions
from .store import QueueLimits, ScheduleRow

__version__ = "0.1.0"
"""This package's release (CHANGELOG.md); pyproject.toml says the same."""

__all__ = [
    "ActionResult",
    "Admin",
    "AsyncJobDefinition",
    "BoundJob",
    "BulkAction",
    "BulkOutcome",
    "Checkpoint",
    "DuplicateCheckpointError",
    "FailureGroup",
    "InvalidCheckpointError",
    "InvalidCursorError",
    "InvalidJobOptionError",
    "InvalidPayloadError",
    "InvalidQueryError",
    "InvalidQueueLimitError",
    "JobAlreadyRegistered",
    "JobCancel",
    "JobCancelled",
    "JobContext",
    "JobDecorator",
    "JobDefinition",
    "JobDependency",
    "JobFailure",
    "JobHandle",
    "JobNotFoundError",
    "JobOptions",
    "JobRow",
    "JobSnapshot",
    "JobTimeout",
    "NotInJobError",
    "Page",
    "QueueLimits",
    "QueueStats",
    "ReadOnlyModelError",
    "ScheduleRow",
    "SchemaVersionError",
    "StalledJobError",
    "StoreMismatchError",
    "TimelineEntry",
    "UnknownDependencyError",
    "UnknownJobError",
    "UnknownQueueError",
    "UnknownScheduleError",
    "WorkerInfo",
    "WorkhorseError",
    "aenqueue",
    "current_job",
    "enqueue",
    "exponential",
    "fixed",
    "job",
]


def __getattr__(name: str) -> object:
    """Old names, kept a while with a ``DeprecationWarning`` (``JobCanceled``)."""
    return deprecated_name(__name__, name)
