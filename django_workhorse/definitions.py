"""Job definitions: the ``@workhorse.job`` decorator and enqueueing.

``enqueue`` runs in the caller's transaction on the job's database alias: if
the surrounding ``transaction.atomic()`` rolls back, the job was never there.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import connections

from . import registry, schedules, store, tracing
from .backoff import BackoffSpec, custom_delay, policy_of
from .conf import duration_seconds, job_defaults
from .exceptions import InvalidJobOptionError, InvalidPayloadError, UnknownDependencyError
from .handles import JobHandle
from .limits import (
    CONCURRENCY_MAX,
    MAX_ATTEMPTS_MAX,
    MAX_ATTEMPTS_MIN,
    MAX_STALLED_MAX,
    MAX_STALLED_MIN,
    PRIORITY_MAX,
    PRIORITY_MIN,
    duration_problem,
    idempotency_key_problem,
    job_name_problem,
    queue_name_problem,
    run_at_problem,
    whole_problem,
)
from .payloads import encode_payload

P = ParamSpec("P")
R = TypeVar("R")

DEPENDENCY_POLICIES = ("all_succeeded", "all_finished", "any_succeeded")
"""How a job with ``depends_on`` settles (docs/durable-execution.md)."""
MAX_DEPENDENCIES = 100_000
"""Prerequisites of one job: far more than a workflow needs, small enough
that the enqueue's JSON and the dependent's snapshot stay reasonable."""
MAX_JOB_ID = 2**63 - 1


@dataclass(frozen=True)
class EnqueueOptions:
    """Per-enqueue choices layered over a job's defaults by ``.options()``."""

    queue: str
    priority: int
    max_attempts: int
    timeout: float | None
    max_stalled: int | None
    delay: float | None = None
    run_at: datetime | None = None
    idempotency_key: str | None = None
    depends_on: tuple[int, ...] = ()
    """Ids of the prerequisites, ascending and without repeats."""
    dependency_policy: str | None = None


def _whole(field: str, value: Any, low: int, high: int) -> int:
    if problem := whole_problem(field, value, low, high):
        raise InvalidJobOptionError(problem)
    return value


def _seconds(field: str, value: Any, *, positive: bool) -> float:
    if problem := duration_problem(field, value, positive=positive):
        raise InvalidJobOptionError(problem)
    return duration_seconds(value)


def _queue(value: Any) -> str:
    if problem := queue_name_problem(value):
        raise InvalidJobOptionError(f"queue: {problem}")
    return value


def validate_options(options: EnqueueOptions) -> EnqueueOptions:
    """The options checked field by field against the rules of ``limits``
    (the database's own); InvalidJobOptionError names the field, the value
    and the rule. Nothing is sent to the database before this passes."""
    _queue(options.queue)
    _whole("priority", options.priority, PRIORITY_MIN, PRIORITY_MAX)
    _whole("max_attempts", options.max_attempts, MAX_ATTEMPTS_MIN, MAX_ATTEMPTS_MAX)
    if options.max_stalled is not None:
        _whole("max_stalled", options.max_stalled, MAX_STALLED_MIN, MAX_STALLED_MAX)
    if options.timeout is not None:
        _seconds("timeout", options.timeout, positive=True)
    if options.delay is not None and options.run_at is not None:
        raise InvalidJobOptionError("pass either delay or run_at, not both")
    if options.delay is not None:
        _seconds("delay", options.delay, positive=False)
    if options.run_at is not None and (problem := run_at_problem(options.run_at)):
        raise InvalidJobOptionError(problem)
    key = options.idempotency_key
    if key is not None and (problem := idempotency_key_problem(key)):
        raise InvalidJobOptionError(problem)
    policy = options.dependency_policy
    if policy is not None and policy not in DEPENDENCY_POLICIES:
        raise InvalidJobOptionError(
            f"dependency_policy must be one of {', '.join(DEPENDENCY_POLICIES)}, got {policy!r:.60}"
        )
    return options


def dependency_ids(value: Any, using: str) -> tuple[int, ...]:
    """The prerequisite ids of a ``depends_on`` option: job handles or ids,
    ascending, each once. InvalidJobOptionError names what is not one, and a
    handle of a job in another database."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise InvalidJobOptionError(
            f"depends_on must be a list of job handles or job ids, got {type(value).__name__}"
        )
    ids = set()
    for item in value:
        if isinstance(item, JobHandle):
            if item.using != using:
                raise InvalidJobOptionError(
                    f"depends_on: job #{item.id} lives in database {item.using!r} and this job "
                    f"in {using!r}; a job can only depend on jobs of its own database"
                )
            item = item.id
        if isinstance(item, bool) or not isinstance(item, int) or not 1 <= item <= MAX_JOB_ID:
            raise InvalidJobOptionError(
                f"depends_on: {item!r:.60} is neither a job handle nor a job id (a whole "
                f"number from 1 to {MAX_JOB_ID})"
            )
        ids.add(item)
    if len(ids) > MAX_DEPENDENCIES:
        raise InvalidJobOptionError(
            f"depends_on names {len(ids):,} jobs; at most {MAX_DEPENDENCIES:,} are allowed"
        )
    return tuple(sorted(ids))


class _Enqueuer(Generic[R]):
    """enqueue / enqueue_many over a definition and a set of options."""

    definition: JobDefinition
    _options: EnqueueOptions

    def _rows_json(self, payloads: Iterable[Mapping[str, Any]]) -> tuple[str, int]:
        """The JSON array for workhorse_enqueue_many_v1, and how many jobs it holds.

        The options are the same for every job of one call, so they are encoded
        once and each payload is spliced in.
        """
        definition, options = self.definition, self._options
        common: dict[str, Any] = {
            "name": definition.name,
            "queue": options.queue,
            "max_attempts": options.max_attempts,
            "priority": options.priority,
            "backoff": definition.backoff_policy,
            "max_stalled": (
                options.max_stalled if options.max_stalled is not None else job_defaults()[3]
            ),
        }
        if options.timeout is not None:
            common["timeout"] = duration_seconds(options.timeout)
        if options.delay is not None:
            common["delay"] = duration_seconds(options.delay)
        if options.run_at is not None:
            common["run_at"] = options.run_at.astimezone(UTC).isoformat()
        if options.idempotency_key is not None:
            common["idempotency_key"] = options.idempotency_key
        if options.depends_on:
            common["depends_on"] = list(options.depends_on)
            common["dependency_policy"] = options.dependency_policy or "all_succeeded"
        trace_context = tracing.current_context()
        if trace_context is not None:
            common["trace_context"] = trace_context
        tail = json.dumps(common, separators=(",", ":"))[1:]
        parts = []
        for payload in payloads:
            definition.check_payload(payload)
            parts.append('{"payload":' + encode_payload(definition.name, payload) + "," + tail)
        return "[" + ",".join(parts) + "]", len(parts)

    def enqueue(self, **payload: Any) -> JobHandle[R]:
        """Enqueue one job with ``payload`` as the handler's keyword arguments."""
        return self.enqueue_many([payload])[0]

    async def aenqueue(self, **payload: Any) -> JobHandle[R]:
        """``enqueue`` for async code, in the transaction of Django's sync thread."""
        return await sync_to_async(self.enqueue)(**payload)

    def enqueue_many(self, payloads: Iterable[Mapping[str, Any]]) -> list[JobHandle[R]]:
        """Enqueue many jobs in one round trip; every payload is checked first,
        so one bad payload writes nothing."""
        rows_json, count = self._rows_json(payloads)
        if not count:
            return []
        using = self.definition.using
        with connections[using].cursor() as cursor:
            if self._options.depends_on:
                self._check_prerequisites_exist(cursor)
            results = store.enqueue_many(cursor, rows_json)
        return [
            JobHandle(job_id, self.definition.name, self._options.queue, inserted, using)
            for job_id, inserted in results
        ]

    def _check_prerequisites_exist(self, cursor) -> None:
        """UnknownDependencyError before any write when a prerequisite does
        not exist (the enqueue function refuses it too, but an error raised
        there would also break the caller's transaction)."""
        missing = store.missing_jobs(cursor, self._options.depends_on)
        if missing:
            shown = ", ".join(f"#{job_id}" for job_id in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            raise UnknownDependencyError(
                f"job {self.definition.name!r} depends on job {shown}{more}, which does not "
                f"exist in database {self.definition.using!r}: enqueue a prerequisite before "
                "its dependents (in the same transaction or a committed one); nothing was enqueued"
            )


class BoundJob(_Enqueuer[R]):
    """A job with per-enqueue options applied; made by ``JobDefinition.options``."""

    def __init__(self, definition: JobDefinition, options: EnqueueOptions) -> None:
        self.definition = definition
        self._options = validate_options(options)

    def options(self, **overrides: Any) -> BoundJob[R]:
        return self.definition._bind(self._options, overrides)


def plain_parameters(signature: inspect.Signature) -> tuple[frozenset, frozenset] | None:
    """(accepted, required) keyword names when every parameter is a plain
    keyword-capable one, so that a payload can be checked by set inclusion;
    None when ``Signature.bind`` must decide (``*args``, ``**kwargs``,
    positional-only parameters)."""
    plain = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    params = signature.parameters.values()
    if any(p.kind not in plain for p in params):
        return None
    accepted = frozenset(p.name for p in params)
    required = frozenset(p.name for p in params if p.default is inspect.Parameter.empty)
    return accepted, required


class JobDefinition(_Enqueuer[R], Generic[P, R]):
    """A registered job type: its handler, name, queue and policies.

    Calling the definition calls the handler directly, in-process (handy in
    tests); ``enqueue`` stores a job for a worker to run.
    """

    def __init__(
        self,
        func: Callable[P, R],
        *,
        name: str | None = None,
        queue: str | None = None,
        max_attempts: int | None = None,
        priority: int = 0,
        timeout: float | timedelta | None = None,
        backoff: BackoffSpec = None,
        retry_on: tuple[type[BaseException], ...] = (),
        max_stalled: int | None = None,
        concurrency: int | None = None,
        using: str | None = None,
        schedule: str | None = None,
    ) -> None:
        database, default_queue, default_max_attempts, _ = job_defaults()
        self.func = func
        self.name = name or f"{func.__module__}.{func.__qualname__}"
        if problem := job_name_problem(self.name):
            raise InvalidJobOptionError(problem)
        self.is_async = inspect.iscoroutinefunction(func)
        self.signature = inspect.signature(func)
        self._plain_params = plain_parameters(self.signature)
        self.using = using or database
        if not isinstance(self.using, str) or self.using not in connections.databases:
            raise InvalidJobOptionError(
                f"job {self.name!r}: using={self.using!r} is not an alias of settings.DATABASES"
            )
        if concurrency is not None:
            _whole("concurrency", concurrency, 1, CONCURRENCY_MAX)
        self.concurrency = concurrency
        if isinstance(retry_on, type):
            retry_on = (retry_on,)
        if not all(isinstance(e, type) and issubclass(e, BaseException) for e in retry_on):
            raise InvalidJobOptionError(
                f"job {self.name!r}: retry_on must be a tuple of exception classes"
            )
        self.retry_on = tuple(retry_on)
        self.backoff = backoff
        self.backoff_policy = policy_of(backoff)
        self._options = validate_options(
            EnqueueOptions(
                queue=queue or default_queue,
                priority=priority,
                max_attempts=(max_attempts if max_attempts is not None else default_max_attempts),
                timeout=None if timeout is None else _seconds("timeout", timeout, positive=True),
                max_stalled=max_stalled,
            )
        )
        self.schedule = (
            None if schedule is None else schedules.check_job_schedule(self.name, schedule)
        )
        if self.schedule is not None:
            self.check_payload({})
        self.definition = self
        self.__doc__ = func.__doc__
        self.__wrapped__ = func

    @property
    def queue(self) -> str:
        return self._options.queue

    @property
    def max_attempts(self) -> int:
        return self._options.max_attempts

    @property
    def timeout(self) -> float | None:
        return self._options.timeout

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<JobDefinition {self.name} queue={self.queue}>"

    def options(self, **overrides: Any) -> BoundJob[R]:
        """The job with per-enqueue options: delay, run_at, priority, queue,
        max_attempts, timeout, idempotency_key, max_stalled, and depends_on
        (job handles or ids) with dependency_policy ("all_succeeded", the
        default, "all_finished" or "any_succeeded"): the job waits, blocked,
        until its prerequisites settle it (docs/durable-execution.md)."""
        return self._bind(self._options, overrides)

    def _bind(self, base: EnqueueOptions, overrides: dict[str, Any]) -> BoundJob[R]:
        allowed = {
            "queue",
            "priority",
            "max_attempts",
            "timeout",
            "delay",
            "run_at",
            "idempotency_key",
            "max_stalled",
            "depends_on",
            "dependency_policy",
        }
        unknown = set(overrides) - allowed
        if unknown:
            raise InvalidJobOptionError(
                f"unknown option(s) {', '.join(sorted(unknown))} for job {self.name!r}; "
                f"known: {', '.join(sorted(allowed))}"
            )
        for key in ("delay", "timeout"):
            if overrides.get(key) is not None:
                overrides[key] = _seconds(key, overrides[key], positive=key == "timeout")
        if "depends_on" in overrides:
            depends_on = overrides["depends_on"]
            overrides["depends_on"] = (
                () if depends_on is None else dependency_ids(depends_on, self.using)
            )
        return BoundJob(self, replace(base, **overrides))

    def check_payload(self, payload: Mapping[str, Any]) -> None:
        """Refuse a payload that does not fit the handler's signature."""
        if not isinstance(payload, Mapping):
            raise InvalidPayloadError(
                f"the payload of job {self.name!r} must be a dict of keyword arguments, "
                f"got {type(payload).__name__}"
            )
        if self._plain_params is not None:
            accepted, required = self._plain_params
            if payload.keys() <= accepted and required <= payload.keys():
                return
        try:
            self.signature.bind(**payload)
        except TypeError as exc:
            raise InvalidPayloadError(
                f"payload does not fit job {self.name!r}{self.signature}: {exc}"
            ) from None

    def retry_delay(self, attempt: int) -> float | None:
        """Seconds before the next attempt from a custom backoff, else None (SQL decides)."""
        return custom_delay(self.backoff, attempt)

    def should_retry(self, exc: BaseException) -> bool:
        """Whether a failure with ``exc`` may be retried: always, unless the job
        declares ``retry_on`` and ``exc`` is none of those."""
        return not self.retry_on or isinstance(exc, self.retry_on)


def job(
    func: Callable[P, R] | None = None,
    *,
    name: str | None = None,
    queue: str | None = None,
    max_attempts: int | None = None,
    priority: int = 0,
    timeout: float | timedelta | None = None,
    backoff: BackoffSpec = None,
    retry_on: tuple[type[BaseException], ...] = (),
    max_stalled: int | None = None,
    concurrency: int | None = None,
    using: str | None = None,
    schedule: str | None = None,
) -> Any:
    """Register a function as a job type.

    ``name`` defaults to ``module.qualname``; ``queue`` to ``WORKHORSE['DEFAULT_QUEUE']``;
    ``max_attempts`` to ``WORKHORSE['DEFAULT_MAX_ATTEMPTS']``; ``priority`` runs from
    -100 to 100, higher first; ``timeout`` ends an attempt as timed out; ``backoff``
    is ``workhorse.exponential(...)`` (default), ``workhorse.fixed(...)`` or a callable;
    ``retry_on`` limits retries to those exceptions; ``concurrency`` is this job's
    queue's slot count when the worker sets none; ``using`` is the database alias;
    ``schedule`` is a cron expression: workers enqueue the job (without
    arguments) at each of its slots (docs/schedules.md).
    """

    def decorate(f: Callable[P, R]) -> JobDefinition[P, R]:
        definition = JobDefinition(
            f,
            name=name,
            queue=queue,
            max_attempts=max_attempts,
            priority=priority,
            timeout=timeout,
            backoff=backoff,
            retry_on=retry_on,
            max_stalled=max_stalled,
            concurrency=concurrency,
            using=using,
            schedule=schedule,
        )
        registry.register(definition)
        return definition

    return decorate(func) if func is not None else decorate


def enqueue(name: str, /, **payload: Any) -> JobHandle[Any]:
    """Enqueue a registered job by name; UnknownJobError if there is none."""
    return registry.get(name).enqueue(**payload)


async def aenqueue(name: str, /, **payload: Any) -> JobHandle[Any]:
    """``enqueue`` by name for async code."""
    return await registry.get(name).aenqueue(**payload)
