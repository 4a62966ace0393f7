"""Tables the acceptance-test jobs write, so tests can see what really ran.

Each row is written by a worker subprocess (a handler, the log handler or an
``on_job_failure`` hook); the tests read them back from the same database.
"""

from django.db import models


class RunRecord(models.Model):
    """One handler run: written when it starts, ``finished_at`` set when it returns."""

    job_id = models.BigIntegerField(db_index=True)
    attempt = models.IntegerField()
    pid = models.IntegerField()
    """The worker process that ran the handler."""
    worker_id = models.TextField()
    label = models.TextField(blank=True, default="")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True)

    def __str__(self) -> str:
        return f"run of job {self.job_id} attempt {self.attempt} in pid {self.pid}"


class FailureCall(models.Model):
    """One call of an ``on_job_failure`` hook, with what the hook received."""

    hook = models.TextField()
    job_id = models.BigIntegerField(db_index=True)
    name = models.TextField()
    queue = models.TextField()
    attempt = models.IntegerField()
    max_attempts = models.IntegerField()
    will_retry = models.BooleanField()
    timed_out = models.BooleanField()
    exception_type = models.TextField()
    exception_message = models.TextField()

    def __str__(self) -> str:
        return f"{self.hook}(job {self.job_id}, attempt {self.attempt})"


class CapturedLog(models.Model):
    """A record of the ``jobtests`` logger, with the workhorse attributes it carried."""

    logger = models.TextField()
    level = models.TextField()
    message = models.TextField()
    pid = models.IntegerField()
    workhorse_job_id = models.BigIntegerField(null=True)
    workhorse_queue = models.TextField(null=True)
    workhorse_attempt = models.IntegerField(null=True)

    def __str__(self) -> str:
        return f"{self.level} {self.logger}: {self.message}"
