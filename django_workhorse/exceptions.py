"""The exceptions django-workhorse raises. Each message says what was wrong and what to do."""

from django.core.exceptions import ImproperlyConfigured


class WorkhorseError(Exception):
    """Base class of every django-workhorse error."""


class UnknownJobError(WorkhorseError, LookupError):
    """No job is registered under the given name."""


class InvalidPayloadError(WorkhorseError, ValueError):
    """A payload is not a JSON object that round-trips, or does not fit the handler."""


class InvalidJobOptionError(WorkhorseError, ValueError):
    """A job option (queue, priority, max_attempts, ...) has a wrong type or value."""


class UnknownDependencyError(WorkhorseError, LookupError):
    """A job named in ``depends_on`` does not exist (never enqueued, rolled
    back, not yet committed elsewhere, or pruned); nothing was enqueued."""


class JobAlreadyRegistered(WorkhorseError, ImproperlyConfigured):
    """Two different handlers were registered under one job name."""


class StoreMismatchError(WorkhorseError, ImproperlyConfigured):
    """A job bound to one database alias met a worker serving another."""


class NotInJobError(WorkhorseError, RuntimeError):
    """Code asked for the current job outside a running job."""


class SchemaVersionError(WorkhorseError, ImproperlyConfigured):
    """The database holds a django-workhorse schema this code does not speak."""


class JobCanceledError(WorkhorseError):
    """Raised inside a handler whose job an operator canceled (at its next
    checkpoint, sleep or ``ctx.raise_if_canceled()``).

    Stored error envelopes name it ``django_workhorse.exceptions.JobCancelled``,
    its name up to 0.1.0: rows written since then, and the SQL functions that
    end a job canceled, say so (``exception_path``)."""


JobCancelled = JobCanceledError
"""The name of ``JobCanceledError`` up to 0.1.0, which error envelopes keep
(``"type": "django_workhorse.exceptions.JobCancelled"``), so that a stored
path still imports. New code names ``JobCanceledError``;
``django_workhorse.JobCancelled`` warns that it is deprecated."""

_STORED_PATHS: dict[type[BaseException], str] = {
    JobCanceledError: "django_workhorse.exceptions.JobCancelled",
}


def exception_path(cls: type[BaseException]) -> str:
    """The dotted path an error envelope (and a Django ``TaskError``) stores
    for exceptions of ``cls``: its module and name, or for
    ``JobCanceledError`` the name of 0.1.0 that stored rows use."""
    return _STORED_PATHS.get(cls) or f"{cls.__module__}.{cls.__qualname__}"


class JobTimeout(WorkhorseError, TimeoutError):
    """An attempt ran longer than its job's ``timeout``.

    A ``TimeoutError``, so that a job declaring ``retry_on=(TimeoutError,)``
    has its timed-out attempts retried (a job's own timeout is otherwise not
    an exception it could name in ``retry_on``)."""


class InvalidCheckpointError(WorkhorseError, ValueError):
    """A checkpoint or sleep was given a bad name, a result that is not JSON,
    or a wake time that is not valid; nothing was written."""


class DuplicateCheckpointError(InvalidCheckpointError):
    """One run used a checkpoint or sleep name a second time; nothing was written."""


class ReadOnlyModelError(WorkhorseError, TypeError):
    """Code tried to write a django-workhorse table through the ORM; the SQL
    functions (through a job's ``enqueue``, the worker or ``Admin``) own every write."""


class UnknownScheduleError(WorkhorseError, LookupError):
    """No repeatable schedule of that name is stored in the database."""


class JobNotFoundError(WorkhorseError, LookupError):
    """No job has the given id in the database (its enqueue rolled back, or it was pruned)."""


class UnknownQueueError(WorkhorseError, LookupError):
    """A queue name that no registered job uses, ``WORKHORSE['QUEUES']`` does not
    name and the database has no policy or job of."""


class InvalidQueueLimitError(WorkhorseError, ValueError):
    """A queue limit (concurrency, rate, period) has a wrong type or value."""


class StalledJobError(WorkhorseError):
    """A job failed because its worker stopped renewing its lease more often
    than the job's ``max_stalled`` allows (``ON_JOB_FAILURE`` receives it)."""


class InvalidQueryError(WorkhorseError, ValueError):
    """A filter, limit or id given to an operator read or action is not valid."""


class InvalidCursorError(InvalidQueryError):
    """A page cursor was not issued by this server for this list."""
