"""Runs made by hand for the in-process tests of the writer and the heartbeat:
a claimed job, as the worker would hold it while its handler runs."""

from __future__ import annotations

from django_workhorse.context import JobContext
from django_workhorse.db import store
from django_workhorse.worker.execution import Running
from tests.worker import jobs


def run_of(job: store.ClaimedJob, owner: str) -> Running:
    """The run of ``job`` by worker ``owner``, with the handler ``jobs.gated``."""
    context = JobContext(
        job_id=job.job_id,
        name=job.name,
        queue=job.queue,
        attempt=job.attempt,
        max_attempts=job.max_attempts,
    )
    return Running(job, jobs.gated, context, owner=owner)
