"""Helpers for testing code that enqueues jobs: ``run_jobs``, ``assert_enqueued``,
and a pytest fixture.

``run_jobs()`` is a worker in the test's own process and connection: it
claims, runs and records jobs through the same SQL functions as
``runworker`` (``claim_many``, ``succeed_many``, ``fail_many``), so a job
that runs here passes the same checks as in production. It works in
pytest-django's plain ``db`` tests (everything stays inside the test's
transaction) and in ``transactional_db`` tests.

Use it as a pytest plugin (``pytest_plugins = ["django_workhorse.testing"]``
in a ``conftest.py``) for the ``workhorse_jobs`` fixture, or call the
functions directly. docs/testing.md has examples.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import async_to_sync
from django.db import connections, transaction

from . import outcomes, registry, store
from .conf import get_settings
from .context import (
    JobContext,
    LeaseLost,
    SleepRequested,
    claimed_context,
    reset_current,
    set_current,
)
from .definitions import JobDefinition
from .exceptions import InvalidPayloadError, JobCancelled, UnknownJobError
from .handles import JobHandle
from .limits import queue_name_problem
from .payloads import encode_result
from .servable import unknown_queues_note

logger = logging.getLogger("django_workhorse.testing")

CLAIM_BATCH = 100
"""Jobs claimed per queue per round; the leases are long since nothing renews them."""
LEASE_SECONDS = 3600.0

DEFAULT_LIMIT = 1000
"""``run_jobs`` stops after this many runs: a job that enqueues itself forever
fails the test instead of hanging it."""


@dataclass(frozen=True)
class JobRun:
    """One run ``run_jobs`` made: the job, the attempt, and how it ended."""

    job_id: int
    name: str
    queue: str
    attempt: int
    ok: bool
    value: Any = None
    """The handler's return value when ``ok``."""
    error: BaseException | None = None
    """The exception the handler raised when not ``ok``."""
    will_retry: bool = False
    """A failed run whose job goes back to the queue for another attempt."""
    slept: bool = False
    """A run that ended in ``ctx.sleep``: the job runs again once it wakes
    (at once, with ``skip_waits``). Neither succeeded nor failed."""


@dataclass
class RunReport:
    """What one ``run_jobs`` call ran, in order."""

    runs: list[JobRun] = field(default_factory=list)

    @property
    def succeeded(self) -> list[JobRun]:
        return [r for r in self.runs if r.ok]

    @property
    def failed(self) -> list[JobRun]:
        return [r for r in self.runs if not r.ok and not r.slept]

    def names(self) -> list[str]:
        """The job names in the order they ran (a retried job appears once per run)."""
        return [r.name for r in self.runs]

    def __len__(self) -> int:
        return len(self.runs)

    def __iter__(self) -> Iterator[JobRun]:
        return iter(self.runs)


class TooManyRuns(AssertionError):
    """``run_jobs`` reached its ``limit`` with jobs still due."""


def _job_name(job: Any) -> str:
    """The job name of a definition, a Django task, or a name."""
    if isinstance(job, str):
        return job
    if isinstance(job, JobDefinition):
        return job.name
    module_path = getattr(job, "module_path", None)
    if isinstance(module_path, str):
        return module_path  # a Django Tasks ``Task``
    raise TypeError(f"expected a job, a task or a job name, got {job!r}")


def _check_names(names: set[str] | None) -> None:
    """UnknownJobError for a name no job (nor Django task) answers to: a typo
    would otherwise run nothing, silently."""
    jobs = registry.all_jobs()
    for name in sorted(names or ()):
        if jobs.get(name) is None:
            raise UnknownJobError(f"run_jobs(names=...): no job named {name!r} is registered")


def _queues(alias: str, names: set[str] | None, queues: Iterable[str] | None) -> list[str]:
    """The queues to claim from this round: ``queues``, or every queue that
    holds a live job (of ``names``, when given), as the database says."""
    if queues is not None:
        return sorted(set(queues))
    with connections[alias].cursor() as cursor:
        return store.live_queues(cursor, None if names is None else sorted(names))


def run_jobs(
    *,
    names: Iterable[Any] | None = None,
    queues: Iterable[str] | None = None,
    limit: int = DEFAULT_LIMIT,
    skip_waits: bool = True,
    raise_errors: bool = False,
    using: str | None = None,
) -> RunReport:
    """Run due jobs in this process until none is left; returns what ran.

    Jobs the handlers enqueue are run too, so a chain or fan-out of jobs runs
    to the end. Every queue that holds a live job is served, whatever queue
    the job was enqueued on. ``names`` (job definitions, Django tasks or
    names) and ``queues`` narrow what runs; a job of a served queue but
    another name is handed back to ready, its attempt and place in line
    unchanged (its timeline shows the claim and the release). With
    ``skip_waits`` (the default), delayed jobs, ``run_at`` in the future,
    retry backoff and a queue's rate-limit window are brought forward instead
    of waited for; ``skip_waits=False`` runs only what is due now. Failed runs are recorded
    as a worker records them (retried within ``max_attempts``);
    ``raise_errors=True`` raises the first handler exception after recording
    it. ``TooManyRuns`` after ``limit`` runs with work still due.
    """
    for option, value in (("names", names), ("queues", queues)):
        if isinstance(value, str | bytes):
            raise TypeError(
                f"run_jobs({option}=...) takes a list, got {type(value).__name__} {value!r}: "
                f"write {option}=[{value!r}]"
            )
    if queues is not None:
        queues = list(queues)
        for queue in queues:
            if problem := queue_name_problem(queue):
                raise ValueError(f"run_jobs(queues=...): {problem}")
    alias = using or get_settings().database
    if queues is not None and (note := unknown_queues_note(alias, queues, get_settings())):
        logger.warning("run_jobs(queues=...): %s, as runworker --queues does", note)
    wanted = None if names is None else {_job_name(n) for n in names}
    _check_names(wanted)
    report = RunReport()
    worker_id = f"testing:{os.getpid()}"
    connection = connections[alias]
    while True:
        # Asked again each round: the jobs just run may have enqueued jobs
        # on other queues.
        served = _queues(alias, wanted, queues)
        if not served:
            return report
        with connection.cursor() as cursor:
            if skip_waits:
                store.make_due(cursor, served)
            runnable = _claim_wanted(cursor, worker_id, served, wanted)
        if not runnable:
            return report
        for index, job in enumerate(runnable):
            if len(report) >= limit:
                _release(runnable[index:], worker_id, alias)
                raise TooManyRuns(
                    f"run_jobs ran {limit} jobs and more are due (next: {job.name} #{job.job_id});"
                    " a job that enqueues itself? raise run_jobs(limit=...) if this is expected"
                )
            run = _run_one(job, worker_id, alias)
            report.runs.append(run)
            if raise_errors and run.error is not None:
                _release(runnable[index + 1 :], worker_id, alias)
                raise run.error


def _claim_wanted(
    cursor: Any, worker_id: str, served: list[str], wanted: set[str] | None
) -> list[store.ClaimedJob]:
    """A batch of the due jobs of ``served`` whose names are ``wanted`` (all
    when None). Jobs of other names are held while claiming goes on, so that
    a backlog of them cannot hide a wanted job queued behind it, then handed
    back to ready in their places in line."""
    runnable: list[store.ClaimedJob] = []
    skipped: list[store.ClaimedJob] = []
    while not runnable:
        claimed = store.claim_many(
            cursor, worker_id, served, [CLAIM_BATCH] * len(served), LEASE_SECONDS
        )
        if not claimed:
            break
        for job in claimed:
            (runnable if wanted is None or job.name in wanted else skipped).append(job)
    if skipped:
        store.release_many(
            cursor, worker_id, [j.job_id for j in skipped], [j.fence for j in skipped]
        )
    return runnable


def _release(jobs: list[store.ClaimedJob], worker_id: str, alias: str) -> None:
    """Hand claimed jobs back to ready, no attempt used (run_jobs stops early)."""
    if jobs:
        with connections[alias].cursor() as cursor:
            store.release_many(cursor, worker_id, [j.job_id for j in jobs], [j.fence for j in jobs])


def _call(definition: JobDefinition[..., Any], job: store.ClaimedJob, alias: str) -> Any:
    """The handler's return value; inside a test's transaction, under a
    savepoint, so that a failing handler leaves the test's transaction usable.

    A run that ends in a durable sleep is not a failure: its savepoint is
    kept, and with it what the handler wrote before the sleep, as a worker
    keeps the writes a handler commits before it sleeps.

    The handler runs in a copy of the test's ``contextvars``, as a worker's
    run does: what it sets there stays out of the next run and the test. An
    async handler runs under its job's timeout, cancelled at the deadline as
    a worker cancels it."""
    payload = job.payload

    def call() -> Any:
        if definition.is_async:
            return contextvars.copy_context().run(async_to_sync(_under_timeout), definition, job)
        return contextvars.copy_context().run(definition.func, **payload)

    if not connections[alias].in_atomic_block:
        return call()
    sleep: SleepRequested | None = None
    with transaction.atomic(using=alias):
        try:
            return call()
        except SleepRequested as request:
            sleep = request
    raise sleep


async def _under_timeout(definition: JobDefinition[..., Any], job: store.ClaimedJob) -> Any:
    async with asyncio.timeout(job.timeout):
        return await definition.func(**job.payload)


def _rewrite_checkpoints(cursor: Any, context: JobContext) -> None:
    """Write again the stages a failed run recorded: the savepoint its
    handler ran under (see ``_call``) was rolled back with them, where a
    worker's checkpoints, written on a connection of their own, stay."""
    journal, run = context._journal, context._run
    if journal is None or run is None:
        return
    for name, encoded in journal.written.items():
        store.write_checkpoint(cursor, context.job_id, run.owner, run.fence, name, encoded)


def _run_one(job: store.ClaimedJob, worker_id: str, alias: str) -> JobRun:
    """Run one claimed job and record how it ended, as a worker records it:
    the admission checks, the stored error and the retry decision are the
    worker's own (``outcomes.py``); only the running differs (in this
    thread, under a savepoint in a ``db`` test). What the run asked to be
    called once its end is recorded (the Tasks backend's ``task_finished``)
    is called then, here."""
    context = claimed_context(
        job, worker_id=worker_id, using=alias, owner=worker_id, cursor=connections[alias].cursor
    )
    try:
        run = _run_and_record(job, context, worker_id, alias)
    except LeaseLost:
        _after_recorded(context)  # as a worker does: the run recorded nothing
        raise
    _after_recorded(context)
    return run


def _after_recorded(context: JobContext) -> None:
    after = context._take_after_recorded()
    if after is not None:
        after()


def _run_and_record(
    job: store.ClaimedJob, context: JobContext, worker_id: str, alias: str
) -> JobRun:
    definition = registry.all_jobs().get(job.name)
    sleep: SleepRequested | None = None
    error: BaseException | None = None
    value: Any = None
    encoded = ""
    retryable = True
    timed_out = False
    refusal = outcomes.admit(job, definition, "run_jobs")
    if refusal is not None:
        error, retryable = refusal.error, refusal.retryable
    else:
        assert definition is not None, "admit refuses a job without a handler"
        try:
            value = _run_handler(definition, job, context, alias)
        except SleepRequested as request:
            sleep = request
        except LeaseLost:
            raise  # the run no longer holds its job: nothing of it can be written
        except _TimedOut as timeout:
            error, timed_out = timeout.error, True
        except BaseException as exc:  # SystemExit and KeyboardInterrupt too, as a worker
            error = exc
        if error is None and sleep is None:
            try:
                encoded = encode_result(value)
            except InvalidPayloadError as exc:
                error, retryable = exc, False  # the same value would be refused again
    with connections[alias].cursor() as cursor:
        if error is not None and connections[alias].in_atomic_block:
            _rewrite_checkpoints(cursor, context)
        if sleep is not None:
            ((_, _, _, canceled),) = store.sleep_many(
                cursor,
                worker_id,
                [job.job_id],
                [job.fence],
                [sleep.name],
                [sleep.wake_at],
                [sleep.delay],
            )
            if canceled:  # its cancel was requested: it ended canceled instead
                error = JobCancelled(f"job {job.job_id} was canceled as it went to sleep")
                return JobRun(job.job_id, job.name, job.queue, job.attempt, False, error=error)
            return JobRun(job.job_id, job.name, job.queue, job.attempt, False, slept=True)
        if error is None:
            store.succeed_many(cursor, worker_id, [job.job_id], [job.fence], [encoded])
            return JobRun(job.job_id, job.name, job.queue, job.attempt, True, value=value)
        kind = outcomes.closing_kind(error, timed_out=timed_out)
        retry = outcomes.retry_decision(
            definition, error, job.attempt, kind=kind, retryable=retryable
        )
        (result,) = store.fail_many(
            cursor,
            worker_id,
            [job.job_id],
            [job.fence],
            [outcomes.error_json(error)],
            [kind],
            [retry.retryable],
            [retry.delay],
        )
    return JobRun(
        job.job_id,
        job.name,
        job.queue,
        job.attempt,
        False,
        error=error,
        will_retry=result.will_retry,
    )


class _TimedOut(Exception):
    """A run that went past its job's timeout: its attempt closes timed out,
    whatever the handler did afterwards, as under a worker."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _run_handler(
    definition: JobDefinition[..., Any], job: store.ClaimedJob, context: JobContext, alias: str
) -> Any:
    """The handler's return value, with ``context`` as the current job.

    A sync handler cannot be stopped at its deadline (a worker abandons its
    thread; this one is the test's): the run's context is marked ended at the
    deadline, as a worker marks it, and once the handler returns its attempt
    closes timed out. An async one is cancelled at the deadline."""
    timeout = job.timeout
    error = outcomes.timeout_error(timeout, abandoned=False)
    timer = None
    if timeout and not definition.is_async:
        timer = threading.Timer(timeout, context._record_end, (error,))
        timer.daemon = True
        timer.start()
    token = set_current(context)
    started = time.monotonic()
    try:
        value = _call(definition, job, alias)
    except BaseException as exc:
        # Past the deadline the attempt timed out, however the handler ended
        # (a cancelled async one raises TimeoutError here).
        if timeout and time.monotonic() - started >= timeout and type(exc) is not LeaseLost:
            raise _TimedOut(error) from exc
        raise
    finally:
        reset_current(token)
        if timer is not None:
            timer.cancel()
    if timeout and time.monotonic() - started > timeout:
        raise _TimedOut(error)
    return value


_ABSENT = object()


def _as_stored(value: Any) -> Any:
    """``value`` as it would read back from a payload (a tuple as a list)."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return value  # not JSON: no payload holds it


def _matches(stored: dict[str, Any], expected: dict[str, Any]) -> bool:
    """Every named argument is in the payload, equal to what it holds (a list
    in order and whole, a dict whole); arguments not named are not looked at."""
    return all(stored.get(key, _ABSENT) == value for key, value in expected.items())


def enqueued_jobs(job: Any, *, using: str | None = None, **payload: Any) -> list[JobHandle[Any]]:
    """Handles of every job of ``job`` (a definition, a Django task or a name)
    whose payload has each of ``payload``'s arguments with an equal value,
    oldest first, whatever their state."""
    from .models import Job

    alias = using or get_settings().database
    name = _job_name(job)
    expected = {key: _as_stored(value) for key, value in payload.items()}
    rows = Job.objects.using(alias).filter(name=name).order_by("id").only("id", "queue", "payload")
    return [
        JobHandle(row.id, name, row.queue, True, alias)
        for row in rows
        if _matches(row.payload, expected)
    ]


def assert_enqueued(job: Any, *, using: str | None = None, **payload: Any) -> JobHandle[Any]:
    """Assert that a job of ``job`` was enqueued with ``payload``: each argument
    named is in the job's payload with an equal value (``args=[1, 2]`` matches
    neither ``[2, 1]`` nor ``[1, 2, 3]``); arguments not named are not
    checked. Returns the newest such job's handle; the message lists what was
    enqueued.

    For a Django task, pass ``args=[...]`` and/or ``kwargs={...}``.
    """
    found = enqueued_jobs(job, using=using, **payload)
    if found:
        return found[-1]
    from .models import Job

    alias = using or get_settings().database
    name = _job_name(job)
    others = list(
        Job.objects.using(alias).filter(name=name).order_by("id").values_list("payload", flat=True)
    )
    raise AssertionError(
        f"no {name} job was enqueued with {payload!r}; "
        + (f"{name} jobs enqueued: {others!r}" if others else f"no {name} job was enqueued")
    )


def assert_not_enqueued(job: Any, *, using: str | None = None, **payload: Any) -> None:
    """Assert that no job of ``job`` was enqueued with ``payload`` (matched as
    by ``assert_enqueued``)."""
    found = enqueued_jobs(job, using=using, **payload)
    if found:
        raise AssertionError(
            f"{len(found)} {_job_name(job)} job(s) were enqueued with {payload!r}: "
            f"ids {[h.id for h in found]}"
        )


class WorkhorseJobs:
    """What the ``workhorse_jobs`` fixture gives a test: the helpers above,
    bound to one database alias."""

    def __init__(self, using: str | None = None) -> None:
        self.using = using

    def run(self, **kwargs: Any) -> RunReport:
        """``run_jobs(**kwargs)``."""
        return run_jobs(using=self.using, **kwargs)

    def assert_enqueued(self, job: Any, **payload: Any) -> JobHandle[Any]:
        return assert_enqueued(job, using=self.using, **payload)

    def assert_not_enqueued(self, job: Any, **payload: Any) -> None:
        assert_not_enqueued(job, using=self.using, **payload)

    def enqueued(self, job: Any, **payload: Any) -> list[JobHandle[Any]]:
        return enqueued_jobs(job, using=self.using, **payload)


try:
    import pytest
except ImportError:  # pragma: no cover - the helpers work without pytest
    pytest = None  # type: ignore[assignment]


def _is_transactional(request: Any) -> bool:
    """Whether the test commits: ``@pytest.mark.django_db(transaction=True)``
    (pytest-django's marker then requests its own helper fixture, not
    ``transactional_db``), or the ``transactional_db`` or ``live_server``
    fixture."""
    marker = request.node.get_closest_marker("django_db")
    if marker is not None:
        transaction = marker.kwargs.get("transaction", marker.args[0] if marker.args else False)
        if transaction or marker.kwargs.get("reset_sequences"):
            return True
    return "transactional_db" in request.fixturenames or "live_server" in request.fixturenames


if pytest is not None:

    @pytest.fixture
    def workhorse_jobs(request: Any) -> Iterator[WorkhorseJobs]:
        """Run and inspect jobs from a test (``pytest_plugins =
        ["django_workhorse.testing"]``). Needs ``db`` or ``transactional_db``;
        after a transactional test it deletes the jobs the test left, which
        Django's flush does not (the workhorse tables are not Django-managed)."""
        yield WorkhorseJobs()
        if not _is_transactional(request):
            return
        # pytest-django may have blocked the database again already (its
        # fixture was torn down first when the test asked for it after this one).
        blocker = request.getfixturevalue("django_db_blocker")
        with blocker.unblock(), connections[get_settings().database].cursor() as cursor:
            store.delete_every_job(cursor)
