"""Read-only Django models over the relations of django-workhorse.

The tables are created by the SQL files the migrations run (two of them are
partitioned, which Django cannot declare), so every model is unmanaged. The
SQL functions own every write; these models exist for reading, the admin and
tests.
"""

from __future__ import annotations

from typing import Any, NoReturn

from django.db import models

from .exceptions import ReadOnlyModelError
from .states import AttemptOutcome, EventKind, JobState

WRITES = {
    "workhorse_job": "create jobs with a job's .enqueue() / .enqueue_many() "
    "(workhorse_enqueue_many_v1)",
    "workhorse_job_runtime": "the worker moves jobs with workhorse_claim_many_v1, "
    "workhorse_succeed_many_v1, workhorse_fail_many_v1, workhorse_release_many_v1 and "
    "workhorse_recover_stalled_v1; operators use workhorse.Admin",
    "workhorse_job_outcome": "outcomes are written by workhorse_succeed_many_v1, "
    "workhorse_fail_many_v1 and workhorse_recover_stalled_v1 as a job ends",
    "workhorse_job_query": "the projection is written by workhorse_enqueue_many_v1",
    "workhorse_job_event": "events are appended by the SQL functions; old ones go with "
    "their day's partition (DROP TABLE workhorse_job_event_pYYYYMMDD)",
    "workhorse_attempt_history": "attempts are appended by the SQL functions; old ones go "
    "with their day's partition (DROP TABLE workhorse_attempt_history_pYYYYMMDD)",
    "workhorse_queue": "queue policy is changed through workhorse.Admin",
}
"""For each table, what writes it instead of the ORM (quoted in the error)."""


def _refuse(model: type[models.Model], operation: str) -> NoReturn:
    table = model._meta.db_table
    raise ReadOnlyModelError(
        f"{model.__name__}.{operation}() would write {table} behind the SQL functions' "
        f"back, so it is refused: {WRITES.get(table, 'use the SQL functions')}"
    )


class ReadOnlyQuerySet(models.QuerySet):
    """Reads as usual; every write raises ReadOnlyModelError naming what to use."""

    def update(self, **kwargs: Any) -> NoReturn:
        _refuse(self.model, "update")

    def delete(self) -> NoReturn:
        _refuse(self.model, "delete")

    def create(self, **kwargs: Any) -> NoReturn:
        _refuse(self.model, "create")

    def bulk_create(self, objs: Any, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(self.model, "bulk_create")

    def bulk_update(self, objs: Any, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(self.model, "bulk_update")

    def get_or_create(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(self.model, "get_or_create")

    def update_or_create(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(self.model, "update_or_create")


class ReadOnlyModel(models.Model):
    """An unmanaged model over a table the SQL functions own."""

    objects = ReadOnlyQuerySet.as_manager()

    class Meta:
        abstract = True
        managed = False

    def save(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(type(self), "save")

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(type(self), "delete")


class Job(ReadOnlyModel):
    """Immutable identity: what to run, where, and under which policy."""

    id = models.BigIntegerField(primary_key=True)
    name = models.TextField()
    queue = models.TextField()
    payload = models.JSONField()
    max_attempts = models.IntegerField()
    priority = models.SmallIntegerField()
    timeout = models.DurationField(null=True)
    backoff = models.JSONField(null=True)
    """The job's retry policy; None for the default one (``exponential()``)."""
    max_stalled = models.IntegerField()
    idempotency_key = models.TextField(null=True)
    trace_context = models.JSONField(null=True)
    created_at = models.DateTimeField()
    dependency_policy = models.TextField(null=True)
    first_due_at = models.DateTimeField(null=True)

    class Meta(ReadOnlyModel.Meta):
        db_table = "workhorse_job"
        # Created by migrate like the model's default permissions (unmanaged
        # models get them too): the admin shows what jobs carry only to
        # holders of it (admin.PAYLOAD_PERMISSION, docs/security.md).
        permissions = [("view_job_payload", "Can see job payloads, results and errors")]

    def __str__(self) -> str:
        return f"{self.name} #{self.id}"


def job_key(related_name: str) -> models.OneToOneField:
    """The primary key of a job's runtime, outcome or query row: its job."""
    return models.OneToOneField(
        Job, primary_key=True, on_delete=models.DO_NOTHING, related_name=related_name
    )


class JobRuntime(ReadOnlyModel):
    """The live row of a blocked, scheduled, ready or active job."""

    job = job_key("runtime")
    queue = models.TextField()
    priority = models.SmallIntegerField()
    state = models.TextField(choices=JobState.choices)
    run_at = models.DateTimeField()
    attempt = models.IntegerField()
    stall_count = models.IntegerField()
    worker_id = models.TextField(null=True)
    fence = models.BigIntegerField()
    lease_expires_at = models.DateTimeField(null=True)
    attempt_started_at = models.DateTimeField(null=True)
    cancel_requested = models.BooleanField()
    pending_dependencies = models.IntegerField()

    class Meta(ReadOnlyModel.Meta):
        db_table = "workhorse_job_runtime"


class JobOutcome(ReadOnlyModel):
    """The terminal row of a succeeded, failed or canceled job."""

    job = job_key("outcome")
    state = models.TextField(choices=JobState.choices)
    result = models.JSONField(null=True)
    error = models.JSONField(null=True)
    attempts = models.IntegerField()
    stall_count = models.IntegerField()
    finished_at = models.DateTimeField()

    class Meta(ReadOnlyModel.Meta):
        db_table = "workhorse_job_outcome"


class JobQuery(ReadOnlyModel):
    """The routing projection operator reads page through, in creation order."""

    job = job_key("query_row")
    queue = models.TextField()
    name = models.TextField()
    created_at = models.DateTimeField()

    class Meta(ReadOnlyModel.Meta):
        db_table = "workhorse_job_query"


class JobHistoryRow(ReadOnlyModel):
    """A row of a job's history: append-only, in a table partitioned by day."""

    id = models.BigIntegerField(primary_key=True)
    job_id = models.BigIntegerField()

    class Meta(ReadOnlyModel.Meta):
        abstract = True


class JobEvent(JobHistoryRow):
    """One stored lifecycle change.

    Not every event of a job's timeline is a row here: the enqueue, the
    claims and a plain success are derived from the job row and the
    attempts (``Admin().get_job_timeline`` shows them all)."""

    at = models.DateTimeField()
    kind = models.TextField(choices=EventKind.choices)
    attempt = models.IntegerField(null=True)
    worker_id = models.TextField(null=True)
    data = models.JSONField(null=True)

    class Meta(JobHistoryRow.Meta):
        db_table = "workhorse_job_event"


class AttemptHistory(JobHistoryRow):
    """How one attempt closed."""

    attempt = models.IntegerField()
    outcome = models.TextField(choices=AttemptOutcome.choices)
    worker_id = models.TextField()
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    error = models.JSONField(null=True)

    class Meta(JobHistoryRow.Meta):
        db_table = "workhorse_attempt_history"


class Queue(ReadOnlyModel):
    """Operator policy of one queue; a queue with no row runs unpaused."""

    name = models.TextField(primary_key=True)
    paused = models.BooleanField()
    updated_at = models.DateTimeField()

    class Meta(ReadOnlyModel.Meta):
        db_table = "workhorse_queue"
