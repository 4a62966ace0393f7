"""Read-only Django models over the relations of django-workhorse.

The tables are created by the SQL files the migrations run (two of them are
partitioned, which Django cannot declare), so every model is unmanaged. The
SQL functions own every write; these models exist for reading, the admin and
tests.
"""

from django.db import models


class Job(models.Model):
    """Immutable identity: what to run, where, and under which policy."""

    id = models.BigIntegerField(primary_key=True)
    name = models.TextField()
    queue = models.TextField()
    payload = models.JSONField()
    max_attempts = models.IntegerField()
    priority = models.SmallIntegerField()
    timeout = models.DurationField(null=True)
    backoff = models.JSONField()
    max_stalled = models.IntegerField()
    idempotency_key = models.TextField(null=True)
    trace_context = models.JSONField(null=True)
    created_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "workhorse_job"

    def __str__(self) -> str:
        return f"{self.name} #{self.id}"


class JobRuntime(models.Model):
    """The live row of a blocked, scheduled, ready or active job."""

    job = models.OneToOneField(
        Job, primary_key=True, on_delete=models.DO_NOTHING, related_name="runtime"
    )
    queue = models.TextField()
    priority = models.SmallIntegerField()
    state = models.TextField()
    run_at = models.DateTimeField()
    attempt = models.IntegerField()
    stall_count = models.IntegerField()
    worker_id = models.TextField(null=True)
    fence = models.BigIntegerField()
    lease_expires_at = models.DateTimeField(null=True)
    attempt_started_at = models.DateTimeField(null=True)
    cancel_requested = models.BooleanField()
    pending_dependencies = models.IntegerField()

    class Meta:
        managed = False
        db_table = "workhorse_job_runtime"


class JobOutcome(models.Model):
    """The terminal row of a succeeded, failed or canceled job."""

    job = models.OneToOneField(
        Job, primary_key=True, on_delete=models.DO_NOTHING, related_name="outcome"
    )
    state = models.TextField()
    result = models.JSONField(null=True)
    error = models.JSONField(null=True)
    attempts = models.IntegerField()
    stall_count = models.IntegerField()
    finished_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "workhorse_job_outcome"


class JobQuery(models.Model):
    """The routing projection operator reads page through, in creation order."""

    job = models.OneToOneField(
        Job, primary_key=True, on_delete=models.DO_NOTHING, related_name="query_row"
    )
    queue = models.TextField()
    name = models.TextField()
    created_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "workhorse_job_query"


class JobEvent(models.Model):
    """One lifecycle change (append-only, partitioned by day)."""

    id = models.BigIntegerField(primary_key=True)
    job_id = models.BigIntegerField()
    at = models.DateTimeField()
    kind = models.TextField()
    attempt = models.IntegerField(null=True)
    worker_id = models.TextField(null=True)
    data = models.JSONField(null=True)

    class Meta:
        managed = False
        db_table = "workhorse_job_event"


class AttemptHistory(models.Model):
    """How one attempt closed (append-only, partitioned by day)."""

    id = models.BigIntegerField(primary_key=True)
    job_id = models.BigIntegerField()
    attempt = models.IntegerField()
    outcome = models.TextField()
    worker_id = models.TextField()
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    error = models.JSONField(null=True)

    class Meta:
        managed = False
        db_table = "workhorse_attempt_history"


class Queue(models.Model):
    """Operator policy of one queue; a queue with no row runs unpaused."""

    name = models.TextField(primary_key=True)
    paused = models.BooleanField()
    updated_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "workhorse_queue"
