"""Helpers for testing code that enqueues jobs: ``run_jobs``, ``assert_enqueued``,
and a pytest fixture.

``run_jobs()`` is a worker in the test's own process and connection: it
claims, runs and records jobs through the same SQL functions as
``runworker`` (``claim_many``, ``succeed_many``, ``fail_many``,
``sleep_many``), taking each run through the worker's own executor and
report (``worker/executor.py``, ``worker/report.py``), so a job that runs
here passes the same checks as in production. It works in
pytest-django's plain ``db`` tests (everything stays inside the test's
transaction) and in ``transactional_db`` tests.

Use it as a pytest plugin (``pytest_plugins = ["django_workhorse.testing"]``
in a ``conftest.py``) for the ``workhorse_jobs`` fixture, or call the
functions directly. docs/testing.md has examples.
"""

from __future__ import annotations

import contextvars
import functools
import json
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from asgiref.sync import async_to_sync
from django.db import connections, transaction

from .context import JobContext, LeaseLost, SleepRequested, claimed_context, set_current
from .core import registry
from .core.conf import get_settings, import_callable
from .core.definitions import JobDefinition
from .core.handles import JobHandle
from .core.limits import queue_name_problem
from .db import store
from .exceptions import JobCanceledError, UnknownJobError
from .operations.servable import unknown_queues_note
from .worker import executor, instruments
from .worker.cancels import stored_reason
from .worker.executor import Finished, Running
from .worker.outcomes import Recorded
from .worker.report import WRITTEN_SUCCESS, InlineCalls, Reporter, recorded_failure

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
    runner = _Runner(worker_id, alias)
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
            run = runner.run(job)
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


def _rewrite_checkpoints(cursor: Any, context: JobContext) -> None:
    """Write again the stages a failed run recorded: the savepoint its
    handler ran under (see ``_Runner._execute``) was rolled back with them,
    where a worker's checkpoints, written on a connection of their own, stay."""
    journal, run = context._journal, context._run
    if journal is None or run is None:
        return
    for name, encoded in journal.written.items():
        store.write_checkpoint(cursor, context.job_id, run.owner, run.fence, name, encoded)


class _Runner:
    """What ``run_jobs`` runs its jobs with: the worker's executor and
    reporter (``django_workhorse.worker.executor`` and ``.report``), with the
    hooks called in the test's thread (``InlineCalls``) and a span per run
    when a tracer provider is set, as a worker does."""

    def __init__(self, worker_id: str, alias: str) -> None:
        settings = get_settings()
        self.worker_id = worker_id
        self.alias = alias
        self.reporter = Reporter(
            InlineCalls(),
            import_callable(settings.on_job_failure) if settings.on_job_failure else None,
            import_callable(settings.on_job_canceled) if settings.on_job_canceled else None,
        )
        # Its own, from the settings and tracer provider of now: the
        # instruments a worker of this process configured may be a finished
        # worker's, with that worker's settings.
        self.instruments = instruments.tracing_only(settings, worker_id)

    def run(self, job: store.ClaimedJob) -> JobRun:
        """Run one claimed job and record how it ended, as a worker does:
        the same executor (admission, handler call, timeout, closing) and
        report (log lines, hooks, the after-recorded call); only the
        running differs (in this thread, under a savepoint in a ``db``
        test) and the writing (one run at a time)."""
        alias = self.alias
        context = claimed_context(
            job,
            worker_id=self.worker_id,
            using=alias,
            owner=self.worker_id,
            cursor=connections[alias].cursor,
        )
        now = time.monotonic()
        deadline = now + job.timeout if job.timeout else None
        definition = registry.all_jobs().get(job.name)
        running = Running(job, definition, context, now, self.worker_id, deadline)
        finished = executor.admit(running, "run_jobs") or self._execute(running)
        if type(finished.error) is LeaseLost:
            # The run no longer holds its job: nothing of it can be written.
            self.reporter.after_recorded(running, written=False)
            raise finished.error
        closing = executor.close(finished)
        with connections[alias].cursor() as cursor:
            if closing.failed and connections[alias].in_atomic_block:
                _rewrite_checkpoints(cursor, context)
            recorded = self._write(cursor, closing)
        if recorded is not WRITTEN_SUCCESS:
            self.reporter.report(closing, recorded)
        self.reporter.after_recorded(running, written=True)
        return _job_run(closing, recorded)

    def _execute(self, running: Running) -> Finished:
        """The run's end, its handler called under a savepoint inside a
        test's transaction, so that a failing handler leaves that
        transaction usable. A run that ends in a durable sleep keeps its
        savepoint, and what the handler wrote before the sleep, as a worker
        keeps the writes a handler commits before it sleeps.

        A sync handler cannot be stopped at its deadline (a worker abandons
        its thread; this one is the test's): its context is marked timed out
        at the deadline, as a worker marks it, and once the handler returns
        its attempt closes timed out. An async one is cancelled at the
        deadline, as under a worker."""
        assert running.definition is not None, "admit refuses a job without a handler"
        timer = None
        if running.job.timeout and not running.definition.is_async:
            timer = threading.Timer(running.job.timeout, executor.mark_timeout, (running,))
            timer.daemon = True
            timer.start()
        try:
            if not connections[self.alias].in_atomic_block:
                finished = self._call(running)
            else:
                with transaction.atomic(using=self.alias):
                    finished = self._call(running)
                    if not finished.ok and type(finished.error) is not SleepRequested:
                        transaction.set_rollback(True, using=self.alias)
        finally:
            if timer is not None:
                timer.cancel()
        if type(finished.error) is not LeaseLost and executor.past_deadline(running):
            finished = executor.timed_out(running, abandoned=False)
        return finished

    def _call(self, running: Running) -> Finished:
        """``executor.execute`` or ``aexecute``, in a copy of the test's
        ``contextvars``, as a worker's run gets its own."""
        assert running.definition is not None, "admit refuses a job without a handler"
        if running.definition.is_async:
            return contextvars.copy_context().run(async_to_sync(self._aexecute), running)
        return contextvars.copy_context().run(
            functools.partial(
                executor.execute,
                running,
                idle=False,
                own_connections=False,
                active=self.instruments,
            )
        )

    async def _aexecute(self, running: Running) -> Finished:
        set_current(running.context)
        return await executor.aexecute(running, own_connections=False, active=self.instruments)

    def _write(self, cursor: Any, closing: executor.Closing) -> Recorded | None:
        """Write one closing, as the worker's writer writes a batch of one:
        what the database recorded, or None when the fence refused it."""
        owner, job = self.worker_id, closing.running.job
        if closing.outcome == executor.SUCCEEDED:
            ((_, ok),) = store.succeed_many(
                cursor, owner, [job.job_id], [job.fence], [closing.encoded]
            )
            return WRITTEN_SUCCESS if ok else None
        if closing.outcome == executor.SLEPT:
            request = cast(SleepRequested, closing.item.error)
            ((_, ok, run_at, canceled),) = store.sleep_many(
                cursor,
                owner,
                [job.job_id],
                [job.fence],
                [request.name],
                [request.wake_at],
                [request.delay],
            )
            if not ok:
                return None
            if canceled:  # its cancel was requested: it ended canceled instead
                return Recorded(executor.CANCELED, reason=stored_reason(cursor, job.job_id))
            return Recorded(executor.SLEPT, run_at=run_at)
        (result,) = store.fail_many(
            cursor,
            owner,
            [job.job_id],
            [job.fence],
            [closing.error_json()],
            [closing.outcome],
            [closing.retryable],
            [closing.delay],
        )
        return recorded_failure(closing, result) if result.ok else None


def _job_run(closing: executor.Closing, recorded: Recorded | None) -> JobRun:
    """The ``JobRun`` of a run that closed as ``closing`` and recorded ``recorded``."""
    job = closing.running.job
    if closing.outcome == executor.SUCCEEDED and recorded is not None:
        return JobRun(job.job_id, job.name, job.queue, job.attempt, True, closing.item.value)
    if closing.outcome == executor.SLEPT:
        if recorded is not None and recorded.outcome == executor.CANCELED:
            error = JobCanceledError(f"job {job.job_id} was canceled as it went to sleep")
            return JobRun(job.job_id, job.name, job.queue, job.attempt, False, error=error)
        return JobRun(job.job_id, job.name, job.queue, job.attempt, False, slept=True)
    return JobRun(
        job.job_id,
        job.name,
        job.queue,
        job.attempt,
        False,
        error=closing.item.error,
        will_retry=recorded is not None and recorded.will_retry,
    )


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
