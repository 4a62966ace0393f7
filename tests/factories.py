"""Factories that make jobs in a given state through the real code paths.

Every factory enqueues with the public ``enqueue`` and moves the job on with
the SQL functions a worker calls (claim, succeed, fail), through
``django_workhorse.db.store``. None of them writes a runtime or outcome row
itself, so every row and timestamp is one the database produced for that
state.

    job = ActiveJobFactory(worker="w1")      # claimed by w1: job.fence, job.attempt
    done = SucceededJobFactory(result={"ok": True})

Each job goes to a queue of its own unless ``queue=`` says otherwise, so a
factory's claim takes exactly the job it just enqueued.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import factory
from demo.jobs import add
from django.db import connection

from django_workhorse import Admin, JobHandle, JobSnapshot
from django_workhorse.db import store


def options_row(**overrides: Any) -> store.JobOptionsRow:
    """The options of ``workhorse_enqueue_batch_v1`` as Python sends them for
    ``demo.jobs.add`` with every default, changed by ``overrides``."""
    fields: dict[str, Any] = {
        "name": "demo.jobs.add",
        "queue": "default",
        "max_attempts": 5,
        "priority": 0,
        "delay": None,
        "run_at": None,
        "idempotency_key": None,
        "timeout": None,
        "backoff_json": None,
        "max_stalled": 1,
        "trace_json": None,
    }
    return store.JobOptionsRow(**(fields | overrides))


@dataclass
class MadeJob:
    """A job a factory made, and the ticket (worker, fence) of its last claim."""

    id: int
    queue: str
    handle: JobHandle
    worker: str | None = None
    fence: int | None = None
    attempt: int = 0

    def snapshot(self) -> JobSnapshot | None:
        return Admin().get_job(self.id)


class ReadyJobFactory(factory.Factory):
    """A job enqueued now, waiting in ``ready`` (or ``scheduled`` with ``delay``)."""

    class Meta:
        model = MadeJob

    definition = factory.LazyFunction(lambda: add)
    payload = factory.Dict({"a": 1, "b": 2})
    queue = factory.Sequence(lambda n: f"factory-{n}")
    priority = 0
    max_attempts = 3
    delay = None
    idempotency_key = None
    depends_on = None
    dependency_policy = None

    @classmethod
    def _create(cls, model_class: type[MadeJob], **params: Any) -> MadeJob:
        options = {
            "queue": params["queue"],
            "priority": params["priority"],
            "max_attempts": params["max_attempts"],
        }
        for key in ("delay", "idempotency_key", "depends_on", "dependency_policy"):
            if params[key] is not None:
                options[key] = params[key]
        handle = params["definition"].options(**options).enqueue(**params["payload"])
        made = model_class(id=handle.id, queue=handle.queue, handle=handle)
        cls._advance(made, params)
        return made

    @classmethod
    def _advance(cls, made: MadeJob, params: dict[str, Any]) -> None:
        """Move the freshly enqueued job to the factory's state."""


class BlockedJobFactory(ReadyJobFactory):
    """A job waiting for the jobs of ``depends_on`` (ids or handles) to settle it."""

    depends_on = factory.LazyFunction(lambda: [ReadyJobFactory().id])


class ScheduledJobFactory(ReadyJobFactory):
    """A job enqueued to run an hour from now."""

    delay = 3600


class ActiveJobFactory(ReadyJobFactory):
    """A job claimed by ``worker`` with a lease of ``lease_seconds``."""

    worker = factory.Sequence(lambda n: f"factory-worker-{n}")
    lease_seconds = 30.0

    @classmethod
    def _advance(cls, made: MadeJob, params: dict[str, Any]) -> None:
        super()._advance(made, params)
        with connection.cursor() as cursor:
            claimed = store.claim_many(
                cursor, params["worker"], [made.queue], [1], params["lease_seconds"]
            )
        if [c.job_id for c in claimed] != [made.id]:
            raise AssertionError(
                f"the factory claimed {[c.job_id for c in claimed]} instead of job {made.id}: "
                f"queue {made.queue!r} holds other ready jobs"
            )
        made.worker, made.fence, made.attempt = (
            params["worker"],
            claimed[0].fence,
            claimed[0].attempt,
        )


class SucceededJobFactory(ActiveJobFactory):
    """A job whose first attempt returned ``result``."""

    result = factory.Dict({"sum": 3})

    @classmethod
    def _advance(cls, made: MadeJob, params: dict[str, Any]) -> None:
        super()._advance(made, params)
        with connection.cursor() as cursor:
            done = store.succeed_many(
                cursor, made.worker, [made.id], [made.fence], [json.dumps(params["result"])]
            )
        assert done == [(made.id, True)], done


class FailedJobFactory(ActiveJobFactory):
    """A job whose attempt raised ``error``; terminal unless ``retryable`` and attempts remain.

    A retried job waits ``retry_delay`` seconds in ``scheduled``.
    """

    error = factory.Dict({"type": "ValueError", "message": "boom"})
    retryable = False
    retry_delay = 3600.0

    @classmethod
    def _advance(cls, made: MadeJob, params: dict[str, Any]) -> None:
        super()._advance(made, params)
        with connection.cursor() as cursor:
            (failed,) = store.fail_many(
                cursor,
                made.worker,
                [made.id],
                [made.fence],
                [json.dumps(params["error"])],
                ["failed"],
                [params["retryable"]],
                [params["retry_delay"]],
            )
        assert failed.ok, failed


class RetryingJobFactory(FailedJobFactory):
    """A job whose first attempt failed and that waits in ``scheduled`` for its retry."""

    retryable = True


def jobs_holding(secret: str, queue: str = "private") -> list[int]:
    """A failed job, a succeeded one with a checkpoint, and a canceled one,
    each carrying ``secret`` in what the job holds (payload, error message
    and traceback, result, checkpoint result, the cancel's reason), never in
    its name or queue: what the payload permission hides."""
    failed = FailedJobFactory(
        queue=queue,
        payload={"a": secret, "b": 2},
        error={
            "type": "builtins.ValueError",
            "message": f"no mailbox {secret}",
            "traceback": f"Traceback (most recent call last):\nValueError: no mailbox {secret}",
        },
    )
    done = ActiveJobFactory(queue=queue)
    with connection.cursor() as cursor:
        store.write_checkpoint(
            cursor, done.id, done.worker, done.fence, "send", json.dumps({"to": secret})
        )
        store.succeed_many(
            cursor, done.worker, [done.id], [done.fence], [json.dumps({"to": secret})]
        )
    canceled = ActiveJobFactory(queue=queue)
    Admin().cancel(canceled.id, reason=f"asked by {secret}")
    return [failed.id, done.id, canceled.id]


def seen_worker(worker_id: str, queues: dict[str, int] | None = None, busy: int = 0) -> str:
    """A worker's row as its heartbeat writes it (``workhorse_heartbeat_many_v1``
    with what the worker says of itself), for the workers view; returns its id."""
    from django_workhorse.worker.presence import describe_worker

    info = describe_worker(worker_id, queues or {"mail": 2}, busy, 15.0, "batched")
    with connection.cursor() as cursor:
        store.heartbeat_many(cursor, worker_id, [], [], 30, json.dumps(info))
    return worker_id


def many_failed_jobs(count: int, queue: str, worker: str = "factory-worker-many") -> list[int]:
    """``count`` jobs of ``queue`` that ended failed, made a thousand at a
    time (enqueued, claimed and failed by the SQL functions, as a worker
    would): for actions over thousands of jobs. Their ids, oldest first."""
    ids: list[int] = []
    for start in range(0, count, 1000):
        handles = add.options(queue=queue, max_attempts=1).enqueue_many(
            [{"a": i, "b": 0} for i in range(start, min(start + 1000, count))]
        )
        with connection.cursor() as cursor:
            claimed = store.claim_many(cursor, worker, [queue], [len(handles)], 300.0)
            store.fail_many(
                cursor,
                worker,
                [c.job_id for c in claimed],
                [c.fence for c in claimed],
                [json.dumps({"type": "ValueError", "message": "boom"})] * len(claimed),
                ["failed"] * len(claimed),
                [False] * len(claimed),
                [None] * len(claimed),
            )
        ids.extend(h.id for h in handles)
    return ids
