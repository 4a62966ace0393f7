"""Job definitions: the ``@workhorse.job`` decorator and enqueueing.

``enqueue`` runs in the caller's transaction on the job's database alias: if
the surrounding ``transaction.atomic()`` rolls back, the job was never there.
"""

from __future__ import annotations

import difflib
import inspect
import json
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import (
    Any,
    Generic,
    ParamSpec,
    Protocol,
    TypeVar,
    Unpack,
    cast,
    overload,
)

from asgiref.sync import sync_to_async
from django.apps import apps
from django.db import DatabaseError, connections, transaction

from ..db import preflight, store
from ..db.enqueue_cursor import kept_cursor
from ..exceptions import (
    InvalidJobOptionError,
    InvalidPayloadError,
    UnknownDependencyError,
    UnknownJobError,
)
from . import configured_jobs, discovery, registry, schedules, trace_context
from .backoff import custom_delay, policy_of
from .conf import SettingsJobDefaults, duration_seconds, job_defaults
from .handles import JobHandle
from .job_options import (
    DEFINITION_DEFAULTS,
    DEFINITION_OPTIONS,
    ENQUEUE_OPTIONS,
    JobDefinitionOptions,
    JobOptions,
    unknown_options,
)
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
    shown,
    whole_problem,
)
from .payloads import (
    checked_payload,
    encode_one_payload_array,
    encode_payload_array,
    encode_payloads,
)

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

DEPENDENCY_POLICIES = ("all_succeeded", "all_finished", "any_succeeded")
"""How a job with ``depends_on`` settles (docs/durable-execution.md)."""
MAX_DEPENDENCIES = 100_000
"""Prerequisites of one job: far more than a workflow needs, small enough
that the enqueue's JSON and the dependent's snapshot stay reasonable."""
MAX_JOB_ID = 2**63 - 1


@dataclass(frozen=True)
class EnqueueOptions:
    """Per-enqueue choices layered over a job's defaults by ``.options()``:
    the options of ``JobOptions`` (job_options.py) as values, durations in
    seconds and prerequisites as ids.

    ``queue``, ``max_attempts`` and ``max_stalled`` left at None take the
    settings' defaults when the job is enqueued (``resolved``), like every
    other default of a job."""

    queue: str | None
    priority: int
    max_attempts: int | None
    timeout: float | None
    max_stalled: int | None
    delay: float | None = None
    run_at: datetime | None = None
    idempotency_key: str | None = None
    depends_on: tuple[int, ...] = ()
    """Ids of the prerequisites, ascending and without repeats."""
    dependency_policy: str | None = None

    def resolved(self, defaults: SettingsJobDefaults | None = None) -> EnqueueOptions:
        """These options with every default filled in from the settings as they
        are now (``DEFAULT_QUEUE``, ``DEFAULT_MAX_ATTEMPTS``, ``MAX_STALLED_COUNT``),
        or from ``defaults`` read from them."""
        if None not in (self.queue, self.max_attempts, self.max_stalled):
            return self
        # A value from the settings is checked like one the caller named
        # (manage.py check reports it too), so SQL never sees a bad one.
        if defaults is None:
            defaults = job_defaults()
        return replace(
            self,
            queue=_queue(self.queue if self.queue is not None else defaults.queue),
            max_attempts=_whole(
                "max_attempts",
                self.max_attempts if self.max_attempts is not None else defaults.max_attempts,
                MAX_ATTEMPTS_MIN,
                MAX_ATTEMPTS_MAX,
            ),
            max_stalled=_whole(
                "max_stalled",
                self.max_stalled if self.max_stalled is not None else defaults.max_stalled,
                MAX_STALLED_MIN,
                MAX_STALLED_MAX,
            ),
        )


def _whole(field: str, value: Any, low: int, high: int) -> int:
    if problem := whole_problem(field, value, low, high):
        raise InvalidJobOptionError(problem)
    return cast(int, value)


def _seconds(field: str, value: Any, *, positive: bool) -> float:
    if problem := duration_problem(field, value, positive=positive):
        raise InvalidJobOptionError(problem)
    return duration_seconds(value)


def _queue(value: Any) -> str:
    if problem := queue_name_problem(value):
        raise InvalidJobOptionError(f"queue: {problem}")
    return cast(str, value)


def validate_options(options: EnqueueOptions) -> EnqueueOptions:
    """The options checked field by field against the rules of ``limits``
    (the database's own); InvalidJobOptionError names the field, the value
    and the rule. Nothing is sent to the database before this passes."""
    if options.queue is not None:
        _queue(options.queue)
    _whole("priority", options.priority, PRIORITY_MIN, PRIORITY_MAX)
    if options.max_attempts is not None:
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
            f"dependency_policy must be one of {', '.join(DEPENDENCY_POLICIES)}, "
            f"got {shown(policy)}"
        )
    return options


def dependency_ids(value: Any, using: str) -> tuple[int, ...]:
    """The prerequisite ids of a ``depends_on`` option: job handles or ids,
    ascending, each once. InvalidJobOptionError names what is not one, and a
    handle of a job in another database."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        one = isinstance(value, JobHandle | int) and not isinstance(value, bool)
        raise InvalidJobOptionError(
            f"depends_on must be a list of job handles or job ids, got {type(value).__name__}"
            + ("; for one prerequisite pass a list of one, depends_on=[job]" if one else "")
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
                f"depends_on: {shown(item)} is neither a job handle nor a job id (a whole "
                f"number from 1 to {MAX_JOB_ID})"
            )
        ids.add(item)
    if len(ids) > MAX_DEPENDENCIES:
        raise InvalidJobOptionError(
            f"depends_on names {len(ids):,} jobs; at most {MAX_DEPENDENCIES:,} are allowed"
        )
    return tuple(sorted(ids))


class _Enqueuer(Generic[P, R]):
    """enqueue / enqueue_many over a definition and a set of options."""

    definition: JobDefinition[P, R]
    _made: tuple[SettingsJobDefaults, EnqueueOptions, store.JobOptionsRow | None, str] | None = None
    """What ``_call_options`` worked out, with the settings' defaults it read."""

    @property
    def _options(self) -> EnqueueOptions:
        """The options an enqueue starts from."""
        raise NotImplementedError

    def _rows_json(
        self, payloads: Iterable[Mapping[str, Any]], options: EnqueueOptions | None = None
    ) -> tuple[str, int]:
        """The JSON array for workhorse_enqueue_many_v1, and how many jobs it holds.

        The options are the same for every job of one call, so they are encoded
        once and each payload is spliced in.
        """
        definition = self.definition
        options = options or self._options.resolved()
        common: dict[str, Any] = {"name": definition.name, **definition.stored_policy(options)}
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
            if options.dependency_policy is not None:
                # Left out, workhorse_enqueue_many_v1 applies the default policy.
                common["dependency_policy"] = options.dependency_policy
        carrier = trace_context.current_context()
        if carrier is not None:
            common["trace_context"] = carrier
        tail = json.dumps(common, separators=(",", ":"))[1:]
        texts = encode_payloads(definition.name, checked_payloads(definition, payloads))
        parts = ['{"payload":' + text + "," + tail for text in texts]
        return "[" + ",".join(parts) + "]", len(parts)

    def enqueue(self, /, *args: P.args, **kwargs: P.kwargs) -> JobHandle[R]:
        """Enqueue one job; the handler will be called with these arguments.

        A type checker checks them against the handler's parameters. They are
        stored as the keyword arguments of the handler: positional ones are
        named after the parameters they fill.
        """
        definition = self.definition
        payload = definition.payload_of(args, kwargs) if args else kwargs
        options, row, using = self._call_options()
        if row is None:
            return self._enqueue_dependents([payload], options)[0]
        # enqueue_many of one payload, without the list: this is every
        # enqueue() (docs/decisions.md, "The single enqueue's own cost").
        definition.check_payload(payload)
        payload_json = encode_one_payload_array(row.name, checked_payload(row.name, payload))
        trace_json = trace_context.current_context_json()
        if trace_json is not None:
            row = replace(row, trace_json=trace_json)
        return self._write(row, payload_json, using, one=True)[0]

    async def aenqueue(self, *args: P.args, **kwargs: P.kwargs) -> JobHandle[R]:
        """``enqueue`` for async code, in the transaction of Django's sync thread."""
        payload = self.definition.payload_of(args, kwargs)
        handles = await sync_to_async(self.enqueue_many)([payload])
        return handles[0]

    def enqueue_many(self, payloads: Iterable[Mapping[str, Any]]) -> list[JobHandle[R]]:
        """Enqueue many jobs in one round trip; each payload is a dict of the
        handler's keyword arguments. Every payload is checked first, so one bad
        payload writes nothing."""
        options, row, using = self._call_options()
        if row is None:
            return self._enqueue_dependents(payloads, options)
        checked = checked_payloads(self.definition, payloads)
        if not checked:
            return []
        payloads_json = encode_payload_array(row.name, checked)
        trace_json = trace_context.current_context_json()
        if trace_json is not None:
            row = replace(row, trace_json=trace_json)
        return self._write(row, payloads_json, using)

    def _write(
        self, row: store.JobOptionsRow, payloads_json: str, using: str, *, one: bool = False
    ) -> list[JobHandle[R]]:
        """Write the jobs of ``payloads_json`` (no prerequisites) in the
        caller's transaction on ``using``; a handle each, in order. ``one``
        (a single enqueue) writes through the connection's kept cursor
        (``enqueue_cursor``), which then holds its one-row result until the
        next; a batch's result goes with its cursor."""
        db = connections[using]
        try:
            cursor = kept_cursor(db) if one else None
            if cursor is None:
                with db.cursor() as cursor:
                    results = store.enqueue_batch(cursor, row, payloads_json)
            else:
                results = store.enqueue_batch(cursor, row, payloads_json)
        except DatabaseError as exc:
            preflight.reraise(exc, using)
            raise
        name, queue = row.name, row.queue
        return [JobHandle(job_id, name, queue, inserted, using) for job_id, inserted in results]

    def _call_options(self) -> tuple[EnqueueOptions, store.JobOptionsRow | None, str]:
        """The options of an enqueue now, the arguments of workhorse_enqueue_batch_v1
        they make (None for jobs with prerequisites; no trace context yet) and
        the database alias.

        Worked out once and kept while the settings they read stay the same
        (``job_defaults`` returns the same value until they change): every
        enqueue of a job asks, and building them took ~11 of the ~27 us of
        Python an enqueue spent before the driver (docs/decisions.md, "The
        single enqueue, end to end").
        """
        defaults = job_defaults()
        made = self._made
        if made is not None and made[0] is defaults:
            return made[1], made[2], made[3]
        refusal = discovery.enqueue_refusal(self.definition)
        if refusal is not None:
            raise UnknownJobError(refusal)
        options = self._options.resolved(defaults)
        row = None if options.depends_on else self._options_row(options)
        using = self.definition._using
        if using is None:
            using = defaults.database
        self._made = (defaults, options, row, using)
        return options, row, using

    def _options_row(self, options: EnqueueOptions) -> store.JobOptionsRow:
        """The options every job of one call is written with (no prerequisites):
        the arguments of workhorse_enqueue_batch_v1, without a trace context
        (``enqueue_many`` adds the current one)."""
        definition = self.definition
        return store.JobOptionsRow(
            name=definition.name,
            queue=cast(str, options.queue),
            max_attempts=cast(int, options.max_attempts),
            priority=options.priority,
            delay=None if options.delay is None else duration_seconds(options.delay),
            # In UTC: PostgreSQL refuses offsets with seconds that Python allows.
            run_at=None if options.run_at is None else options.run_at.astimezone(UTC),
            idempotency_key=options.idempotency_key,
            timeout=None if options.timeout is None else duration_seconds(options.timeout),
            backoff_json=definition.backoff_json,
            max_stalled=cast(int, options.max_stalled),
            trace_json=None,
        )

    def _enqueue_dependents(
        self, payloads: Iterable[Mapping[str, Any]], options: EnqueueOptions
    ) -> list[JobHandle[R]]:
        """Jobs with prerequisites, through workhorse_enqueue_many_v1, which
        checks and locks the prerequisites and writes the edges."""
        rows_json, count = self._rows_json(payloads, options)
        if not count:
            return []
        using = self.definition.using
        queue = cast(str, options.queue)
        # The check holds the prerequisites until the transaction ends, so
        # outside one the two statements get a transaction of their own:
        # retention cannot delete a prerequisite between them.
        conn = connections[using]
        one_transaction = nullcontext() if conn.in_atomic_block else transaction.atomic(using)
        try:
            with one_transaction, conn.cursor() as cursor:
                self._check_prerequisites_exist(cursor)
                results = store.enqueue_many(cursor, rows_json)
        except DatabaseError as exc:
            preflight.reraise(exc, using)
            raise
        return [
            JobHandle(job_id, self.definition.name, queue, inserted, using)
            for job_id, inserted in results
        ]

    def _check_prerequisites_exist(self, cursor: store.Cursor) -> None:
        """UnknownDependencyError before any write when a prerequisite does
        not exist (the enqueue function refuses it too, but an error raised
        there would also break the caller's transaction). The prerequisites
        that exist are held until the transaction ends, so that retention
        cannot delete one before the enqueue (``workhorse_lock_prerequisites_v1``)."""
        missing = store.lock_prerequisites(cursor, self._options.depends_on)
        if missing:
            shown = ", ".join(f"#{job_id}" for job_id in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            raise UnknownDependencyError(
                f"job {self.definition.name!r} depends on job {shown}{more}, which does not "
                f"exist in database {self.definition.using!r}: enqueue a prerequisite before "
                "its dependents (in the same transaction or a committed one); nothing was enqueued"
            )


class BoundJob(_Enqueuer[P, R]):
    """A job with per-enqueue options applied; made by ``JobDefinition.options``."""

    def __init__(self, definition: JobDefinition[P, R], options: EnqueueOptions) -> None:
        self.definition = definition
        self._given = validate_options(options)

    @property
    def _options(self) -> EnqueueOptions:
        return self._given

    def options(self, **overrides: Unpack[JobOptions]) -> BoundJob[P, R]:
        """More per-enqueue options over these (the later value of a key wins; a
        later ``delay`` replaces an earlier ``run_at`` and the other way round)."""
        return self.definition._bind(self._options, overrides)


def checked_payloads(
    definition: JobDefinition[..., Any], payloads: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Each payload checked against the handler and as plain JSON, in order,
    as a list of plain dicts (encode it with ``encode_payload_array``).

    A bad payload among several is named by its position (``payloads[17] of
    1000``), so that the caller can find it; nothing is written either way.
    """
    if isinstance(payloads, Mapping | str | bytes):
        raise InvalidPayloadError(
            f"enqueue_many of job {definition.name!r} takes a list of payload dicts, got a "
            f"{type(payloads).__name__}; enqueue one job with enqueue(**payload)"
        )
    if not isinstance(payloads, Iterable):
        raise InvalidPayloadError(
            f"enqueue_many of job {definition.name!r} takes a list of payload dicts, got "
            f"{type(payloads).__name__} {shown(payloads)}"
        )
    batch = payloads if isinstance(payloads, list | tuple) else list(payloads)
    checked = []
    name = definition.name
    check = definition.check_payload
    for index, payload in enumerate(batch):
        try:
            check(payload)
            checked.append(checked_payload(name, payload))
        except InvalidPayloadError as exc:
            if len(batch) == 1:
                raise
            raise InvalidPayloadError(f"payloads[{index}] of {len(batch)}: {exc}") from None
    return checked


def plain_parameters(
    signature: inspect.Signature,
) -> tuple[frozenset[str], frozenset[str]] | None:
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


class JobDefinition(_Enqueuer[P, R]):
    """A registered job type: its handler, name, queue and policies.

    ``JobDefinition[P, R]`` carries the handler's parameters ``P`` and its
    result ``R`` (what ``JobHandle.result`` gives back; for an ``async def``
    handler, the awaited result), so that a type checker checks ``enqueue``
    and ``options(...).enqueue`` calls against the handler.

    Calling the definition calls the handler directly, in-process (handy in
    tests); ``enqueue`` stores a job for a worker to run.
    """

    _configured_made: tuple[Mapping[str, Any], EnqueueOptions] | None = None
    """The ``WORKHORSE['JOB_OPTIONS']`` entry last applied, and the options it made."""

    def __init__(
        self,
        func: Callable[P, R] | Callable[P, Awaitable[R]],
        **options: Unpack[JobDefinitionOptions],
    ) -> None:
        given: object = func  # typed as a callable; checked, as callers pass anything
        if not callable(given):
            hint = (
                f"to name the job, write @workhorse.job(name={given!r})"
                if isinstance(given, str)
                else "write @workhorse.job or @workhorse.job(name=..., queue=...) above a def"
            )
            raise InvalidJobOptionError(
                f"workhorse.job registers a function, got {shown(given)} "
                f"({type(given).__name__}); {hint}"
            )
        self.func: Callable[P, Any] = func
        where = f"@workhorse.job on {func.__module__}.{func.__qualname__}"
        if problem := unknown_options(options, DEFINITION_OPTIONS, where):
            raise InvalidJobOptionError(problem)
        chosen: dict[str, Any] = {**DEFINITION_DEFAULTS, **options}
        name, using, concurrency = chosen["name"], chosen["using"], chosen["concurrency"]
        retry_on, backoff, schedule = chosen["retry_on"], chosen["backoff"], chosen["schedule"]
        timeout = chosen["timeout"]
        self.registered_while_apps_load = not apps.ready
        """Defined while Django loaded the apps (an app's ``jobs.py``, its
        models, what they import): every process of the project knows it."""
        self.defined_in: str = func.__module__
        """The module the handler is defined in (a Django task's for the Tasks backend)."""
        self.import_path = f"{func.__module__}.{func.__qualname__}"
        """The handler's import path (a Django task's path for the Tasks backend)."""
        self.runs_logged_elsewhere = False
        """True for a Django task: ``django.tasks`` logs its start and end."""
        self.name = name or self.import_path
        if problem := job_name_problem(self.name):
            raise InvalidJobOptionError(problem)
        self.is_async = inspect.iscoroutinefunction(func)
        self.signature = inspect.signature(func)
        self._plain_params = plain_parameters(self.signature)
        self._positional_names = positional_names(self.signature)
        if using is not None and (not isinstance(using, str) or using not in connections.databases):
            raise InvalidJobOptionError(
                f"job {self.name!r}: using={shown(using)} is not an alias of settings.DATABASES"
            )
        self._using = using
        if concurrency is not None:
            _whole("concurrency", concurrency, 1, CONCURRENCY_MAX)
        self.concurrency = concurrency
        self._declared_retry_on = self._exceptions("retry_on", retry_on)
        self._declared_no_retry_on = self._exceptions("no_retry_on", chosen["no_retry_on"])
        self.backoff = backoff
        self.backoff_policy = policy_of(backoff)
        self.backoff_json = json.dumps(self.backoff_policy, separators=(",", ":"))
        """The policy as the enqueue functions take it (encoded once)."""
        self._declared = validate_options(
            EnqueueOptions(
                queue=chosen["queue"],
                priority=chosen["priority"],
                max_attempts=chosen["max_attempts"],
                timeout=None if timeout is None else _seconds("timeout", timeout, positive=True),
                max_stalled=chosen["max_stalled"],
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

    def _exceptions(self, option: str, value: Any) -> tuple[type[BaseException], ...]:
        if isinstance(value, type):
            value = (value,)
        if not isinstance(value, tuple | list) or not all(
            isinstance(e, type) and issubclass(e, BaseException) for e in value
        ):
            raise InvalidJobOptionError(
                f"job {self.name!r}: {option} must be an exception class or a tuple of them "
                f"({option}=(TimeoutError, ConnectionError)), got {shown(value)}"
            )
        return tuple(value)

    @property
    def _options(self) -> EnqueueOptions:
        """The decorator's options, with those ``WORKHORSE['JOB_OPTIONS']`` gives
        the job in their place (configured_jobs.py)."""
        configured = self._configured()
        return self._declared if configured is None else configured[1]

    def _configured(self) -> tuple[Mapping[str, Any], EnqueueOptions] | None:
        """The settings entry that names this job and the options it makes,
        worked out once per entry (one identity test per call after that)."""
        found = configured_jobs.entry_for(self)
        if found is None:
            return None
        entry = found[1]
        made = self._configured_made
        if made is not None and made[0] is entry:
            return made
        given = {k: v for k, v in entry.items() if k not in configured_jobs.EXCEPTION_OPTIONS}
        if given.get("timeout") is not None:
            given["timeout"] = duration_seconds(given["timeout"])
        made = (entry, validate_options(replace(self._declared, **given)))
        self._configured_made = made
        return made

    @property
    def retry_on(self) -> tuple[type[BaseException], ...]:
        """Exceptions a failure is retried on (all, when empty): ``retry_on=`` of
        the decorator, or of ``WORKHORSE['JOB_OPTIONS']``."""
        return self._exceptions_option("retry_on", self._declared_retry_on)

    @property
    def no_retry_on(self) -> tuple[type[BaseException], ...]:
        """Exceptions a failure is never retried on: ``no_retry_on=`` of the
        decorator, or of ``WORKHORSE['JOB_OPTIONS']``."""
        return self._exceptions_option("no_retry_on", self._declared_no_retry_on)

    def _exceptions_option(
        self, option: str, declared: tuple[type[BaseException], ...]
    ) -> tuple[type[BaseException], ...]:
        found = configured_jobs.entry_for(self)
        if found is None or option not in found[1]:
            return declared
        return configured_jobs.exceptions_of(found[1][option])

    def option_sources(self) -> tuple[str, Mapping[str, Any]] | None:
        """``(where, options)`` when ``WORKHORSE['JOB_OPTIONS']`` gives this job
        options (``where`` names the entry), for the admin's job page."""
        found = configured_jobs.entry_for(self)
        if found is None:
            return None
        return configured_jobs.where(found[0]), found[1]

    @property
    def using(self) -> str:
        """The database alias: ``using=`` of the decorator, else ``WORKHORSE['DATABASE']``
        as it is now."""
        return self._using if self._using is not None else job_defaults().database

    @property
    def queue(self) -> str:
        """The queue: ``queue=`` of the decorator, else ``WORKHORSE['DEFAULT_QUEUE']``
        as it is now."""
        return cast(str, self._options.resolved().queue)

    @property
    def max_attempts(self) -> int:
        """``max_attempts=`` of the decorator, else ``WORKHORSE['DEFAULT_MAX_ATTEMPTS']``
        as it is now."""
        return cast(int, self._options.resolved().max_attempts)

    @property
    def timeout(self) -> float | None:
        return self._options.timeout

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return cast(R, self.func(*args, **kwargs))

    def __repr__(self) -> str:
        return f"<JobDefinition {self.name} queue={self.queue}>"

    def options(self, **overrides: Unpack[JobOptions]) -> BoundJob[P, R]:
        """The job with per-enqueue options: delay, run_at, priority, queue,
        max_attempts, timeout, idempotency_key, max_stalled, and depends_on
        (job handles or ids) with dependency_policy ("all_succeeded", the
        default, "all_finished" or "any_succeeded"): the job waits, blocked,
        until its prerequisites settle it (docs/durable-execution.md)."""
        return self._bind(self._options, overrides)

    def _bind(self, base: EnqueueOptions, overrides: Mapping[str, Any]) -> BoundJob[P, R]:
        if problem := unknown_options(overrides, ENQUEUE_OPTIONS, f"job {self.name!r}"):
            raise InvalidJobOptionError(problem)
        changes = dict(overrides)
        # delay and run_at both say when the job is due: one named by a later
        # .options() replaces the other named earlier (both in one call are
        # still refused by validate_options).
        for key, other in (("delay", "run_at"), ("run_at", "delay")):
            if changes.get(key) is not None and other not in changes:
                changes[other] = None
        for key in ("delay", "timeout"):
            if changes.get(key) is not None:
                changes[key] = _seconds(key, changes[key], positive=key == "timeout")
        if "depends_on" in changes:
            depends_on = changes["depends_on"]
            changes["depends_on"] = (
                () if depends_on is None else dependency_ids(depends_on, self.using)
            )
        return BoundJob(self, replace(base, **changes))

    def stored_policy(self, options: EnqueueOptions) -> dict[str, Any]:
        """What a job row of this definition keeps of ``options`` (resolved):
        queue, attempts, priority, backoff and stall limit, as an enqueue and
        a schedule's sync send them."""
        return {
            "queue": options.queue,
            "max_attempts": options.max_attempts,
            "priority": options.priority,
            "backoff": self.backoff_policy,
            "max_stalled": options.max_stalled,
        }

    def payload_of(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The stored payload of ``enqueue(*args, **kwargs)``: the keyword
        arguments, with each positional argument named after its parameter.
        InvalidPayloadError when a positional argument has no named parameter
        to fill (``*args``, or more arguments than parameters) or fills one
        that is also passed by keyword."""
        if not args:
            return kwargs
        names = self._positional_names
        if len(args) > len(names):
            raise InvalidPayloadError(
                f"job {self.name!r}{self.signature} takes {len(names)} argument(s) by position "
                f"but {len(args)} were given; a job's arguments are stored by name, so pass "
                "the others by keyword"
            )
        payload = dict(zip(names, args, strict=False))
        if twice := sorted(payload.keys() & kwargs.keys()):
            raise InvalidPayloadError(
                f"job {self.name!r}{self.signature} got {', '.join(twice)} both by position "
                "and by keyword"
            )
        payload.update(kwargs)
        return payload

    def check_payload(self, payload: Mapping[str, Any]) -> None:
        """Refuse a payload that does not fit the handler's signature."""
        # A plain dict (every payload enqueue builds) skips the Mapping ABC check.
        if type(payload) is not dict and not isinstance(payload, Mapping):
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
                f"{self._unexpected_names(payload)}"
            ) from None

    def _unexpected_names(self, payload: Mapping[str, Any]) -> str:
        """The payload's keys the handler has no keyword parameter for, each
        with the parameter it may have meant: a misspelt argument otherwise
        shows only as a missing one."""
        params = self.signature.parameters
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            return ""
        keywords = [
            p.name
            for p in params.values()
            if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        ]
        unknown = [key for key in payload if key not in keywords]
        if not unknown:
            return ""
        named = []
        for key in unknown:
            close = difflib.get_close_matches(str(key), keywords, n=1)
            named.append(f"{key!r} (did you mean {close[0]!r}?)" if close else repr(key))
        return f"; the handler takes no argument {', '.join(named)}"

    def retry_delay(self, attempt: int) -> float | None:
        """Seconds before the next attempt from a custom backoff, else None (SQL decides)."""
        return custom_delay(self.backoff, attempt)

    def should_retry(self, exc: BaseException) -> bool:
        """Whether a failure with ``exc`` may be retried: always, unless the job
        declares ``retry_on`` and ``exc`` is none of those, or ``exc`` is one of
        its ``no_retry_on``."""
        if isinstance(exc, self.no_retry_on):
            return False
        retry_on = self.retry_on
        return not retry_on or isinstance(exc, retry_on)


class AsyncJobDefinition(JobDefinition[P, R]):
    """The definition of an ``async def`` handler: ``R`` is the awaited result
    (what the job stores and ``JobHandle.result`` gives back), and calling the
    definition returns the handler's coroutine, as calling the handler does."""

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Coroutine[Any, Any, R]:  # type: ignore[override]
        return cast(Coroutine[Any, Any, R], self.func(*args, **kwargs))

    def __repr__(self) -> str:
        return f"<AsyncJobDefinition {self.name} queue={self.queue}>"


class JobDecorator(Protocol):
    """What ``@workhorse.job(...)`` with options returns: the decorator proper."""

    @overload
    def __call__(
        self, func: Callable[P, Coroutine[Any, Any, T]], /
    ) -> AsyncJobDefinition[P, T]: ...

    @overload
    def __call__(self, func: Callable[P, R], /) -> JobDefinition[P, R]: ...


@overload
def job(func: Callable[P, Coroutine[Any, Any, T]], /) -> AsyncJobDefinition[P, T]: ...


@overload
def job(func: Callable[P, R], /) -> JobDefinition[P, R]: ...


@overload
def job(func: None = None, /, **options: Unpack[JobDefinitionOptions]) -> JobDecorator: ...


def job(
    func: Callable[..., Any] | None = None, /, **options: Unpack[JobDefinitionOptions]
) -> JobDefinition[..., Any] | JobDecorator:
    """Register a function as a job type.

    The options are those of ``JobDefinitionOptions`` (job_options.py, each
    with its meaning and default): name, queue, priority, max_attempts,
    timeout, max_stalled, backoff, retry_on, no_retry_on, concurrency, using,
    schedule. ``WORKHORSE['JOB_OPTIONS']`` may replace the queue, priority,
    attempts, timeout, stalls and exceptions (configured_jobs.py).
    Defaults read from the settings are read when a job is enqueued, not here.

    Used bare (``@job``) or with options (``@job(queue=...)``); either way a
    type checker sees a ``JobDefinition[P, R]`` of the handler's parameters
    and result (an ``AsyncJobDefinition`` for an ``async def``).
    """

    # Checked here too, so that a misspelt option is named at the decorator's line.
    if problem := unknown_options(options, DEFINITION_OPTIONS, "@workhorse.job"):
        raise InvalidJobOptionError(problem)

    def decorate(f: Callable[..., Any]) -> JobDefinition[..., Any]:
        kind = AsyncJobDefinition if inspect.iscoroutinefunction(f) else JobDefinition
        definition: JobDefinition[..., Any] = kind(f, **options)
        registry.register(definition)
        return definition

    return decorate(func) if func is not None else cast(JobDecorator, decorate)


def positional_names(signature: inspect.Signature) -> tuple[str, ...]:
    """The names that positional arguments of ``enqueue`` fill, in order: the
    leading parameters that may also be passed by keyword."""
    names = []
    for parameter in signature.parameters.values():
        if parameter.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD:
            break
        names.append(parameter.name)
    return tuple(names)


def enqueue(name: str, /, **payload: Any) -> JobHandle[Any]:
    """Enqueue a registered job by name (keyword arguments only); UnknownJobError
    if there is none."""
    return registry.get(name).enqueue(**payload)


async def aenqueue(name: str, /, **payload: Any) -> JobHandle[Any]:
    """``enqueue`` by name for async code."""
    return await registry.get(name).aenqueue(**payload)
