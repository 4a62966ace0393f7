"""django-workhorse: a durable job queue for Django on PostgreSQL alone.

Everything a user calls is importable from here::

    import django_workhorse as workhorse

    @workhorse.job(queue="email", max_attempts=5, timeout=60)
    def send_invoice(invoice_id: int) -> dict: ...

    handle = send_invoice.enqueue(invoice_id=42)   # in the caller's transaction
    handle.refresh().status                 # 'ready', ..., 'succeeded'
"""

from . import old_paths  # noqa: F401  (the module paths of 0.1.0 still import)
from .context import JobContext, current_job
from .core.backoff import exponential, fixed
from .core.definitions import (
    AsyncJobDefinition,
    BoundJob,
    JobDecorator,
    JobDefinition,
    aenqueue,
    enqueue,
    job,
)
from .core.handles import JobHandle
from .core.hooks import JobCancel, JobFailure, deprecated_name
from .core.job_options import JobOptions
from .db.snapshots import Checkpoint, JobDependency, JobSnapshot
from .db.store import QueueLimits, ScheduleRow
from .exceptions import (
    DuplicateCheckpointError,
    InvalidCheckpointError,
    InvalidCursorError,
    InvalidJobOptionError,
    InvalidPayloadError,
    InvalidQueryError,
    InvalidQueueLimitError,
    JobAlreadyRegistered,
    JobCanceledError,
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
from .operations import installed_check  # noqa: F401  (registers workhorse.E103 / E009)
from .operations.admin_api import (
    ActionResult,
    Admin,
    BulkOutcome,
    FailureGroup,
    JobRow,
    Page,
    QueueStats,
    TimelineEntry,
    WorkerInfo,
)
from .operations.bulk_actions import BulkAction

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
    "JobCanceledError",
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
    """Old names, kept a while with a ``DeprecationWarning``: ``JobCanceled``
    (now ``JobCancel``) and ``JobCancelled`` (now ``JobCanceledError``)."""
    if name == "JobCancelled":
        import warnings

        warnings.warn(
            "django_workhorse.JobCancelled is deprecated: it is "
            "django_workhorse.JobCanceledError (cancel is spelled as in the "
            "'canceled' state everywhere)",
            DeprecationWarning,
            stacklevel=2,
        )
        return JobCanceledError
    return deprecated_name(__name__, name)
