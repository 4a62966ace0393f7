"""The job state machine, written down once.

Every state a job can be in, every event kind the SQL functions record, and
every way an attempt can close. The SQL CHECK constraints list the same
values (``tables_v1.sql``); ``tests/integration/test_states.py`` compares
the two, so neither can change alone. See docs/concepts.md for the diagram.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from django.db import models

if TYPE_CHECKING:
    from enum import StrEnum

    class _TextChoices(StrEnum):
        """What a type checker knows of Django's ``TextChoices`` (Django ships
        no types): a ``StrEnum`` whose members have a label."""

        choices: ClassVar[list[tuple[str, str]]]
        label: str

else:
    _TextChoices = models.TextChoices


class JobState(_TextChoices):
    """Where a job is. The first four live in ``workhorse_job_runtime``, the
    last three in ``workhorse_job_outcome``."""

    BLOCKED = "blocked"
    """Waiting for its prerequisites: set at enqueue with ``depends_on``;
    left for ready or scheduled (released), or for canceled, by
    ``workhorse_settle_dependents_v1`` when a prerequisite's end settles it
    under its dependency policy, or by an operator's cancel."""
    SCHEDULED = "scheduled"
    """Waiting for its run_at: set at enqueue with a delay, by a retry
    with backoff and by a durable sleep (``ctx.sleep``); promoted to ready
    by the next claim of its queue once due."""
    READY = "ready"
    """Claimable now: set at enqueue, by promotion, a retry without delay, a
    release at shutdown and stall recovery; left when a worker claims it."""
    ACTIVE = "active"
    """Claimed by a worker under a lease and a fence; left by the worker's
    success, failure, release or sleep, or by stall recovery once the lease
    expires."""
    SUCCEEDED = "succeeded"
    """Terminal: the handler returned (``workhorse_succeed_many_v1``)."""
    FAILED = "failed"
    """Terminal: the last attempt failed, or the job stalled too often."""
    CANCELED = "canceled"
    """Terminal: an operator canceled the job (``workhorse_cancel_v1``; for a
    running job its worker acks the cancel through ``workhorse_fail_many_v1``),
    or its dependency policy can no longer be met (a prerequisite failed or was
    canceled)."""

    @classmethod
    def live(cls) -> tuple[JobState, ...]:
        return (cls.BLOCKED, cls.SCHEDULED, cls.READY, cls.ACTIVE)

    @classmethod
    def terminal(cls) -> tuple[JobState, ...]:
        return (cls.SUCCEEDED, cls.FAILED, cls.CANCELED)

    @property
    def is_terminal(self) -> bool:
        return self in JobState.terminal()


class EventKind(_TextChoices):
    """What a timeline event records (the CHECK on ``workhorse_job_event.kind``).

    ``ENQUEUED``, ``CLAIMED`` and a run's plain ``SUCCEEDED`` appear in the
    timeline (``workhorse_job_timeline_v1``) but are mostly not stored: the
    job row and the attempt history record them already (docs/concepts.md).
    """

    ENQUEUED = "enqueued"
    PROMOTED = "promoted"
    CLAIMED = "claimed"
    SUCCEEDED = "succeeded"
    RETRY_SCHEDULED = "retry_scheduled"
    FAILED = "failed"
    RELEASED = "released"
    STALLED = "stalled"
    MADE_DUE = "made_due"
    """A scheduled job made due at once by ``django_workhorse.testing``."""
    RETRIED = "retried"
    """An operator sent a failed or canceled job back to ready (``Admin.retry``)."""
    CANCELED = "canceled"
    """The job ended canceled: an operator canceled it while it waited
    (``Admin.cancel``), its worker stopped it on a cancel request, or a blocked
    job's prerequisites settled it canceled."""
    UNBLOCKED = "unblocked"
    """A blocked job's prerequisites released it to ready or scheduled."""
    CANCEL_REQUESTED = "cancel_requested"
    """An operator asked to cancel a running job (``Admin.cancel``); its
    worker is told and acks the job canceled."""
    SLEPT = "slept"
    """A running job went to sleep (``ctx.sleep``): back to scheduled until
    its wake time, its attempt given back (``workhorse_sleep_many_v1``)."""


class AttemptOutcome(_TextChoices):
    """How one attempt closed (``workhorse_attempt_history.outcome``)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    STALLED = "stalled"
    CANCELED = "canceled"
    SLEPT = "slept"
    """The handler called ``ctx.sleep``: the run ended without using up the
    attempt, and the job waits for its wake time."""

    @classmethod
    def of_failures(cls) -> tuple[AttemptOutcome, ...]:
        """The outcomes ``workhorse_fail_many_v1`` accepts for a run that did
        not succeed: failed, timed out, or canceled (never retried)."""
        return (cls.FAILED, cls.TIMED_OUT, cls.CANCELED)
