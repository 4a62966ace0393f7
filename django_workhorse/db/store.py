"""The one module that calls django-workhorse's SQL functions.

Every lifecycle change happens inside a versioned SQL function installed by
the migrations; the rest of the package calls these wrappers and never writes
the tables itself. Each wrapper takes a DB-API cursor: a Django cursor
(inside the caller's transaction) or a worker's own psycopg cursor. JSON
travels as text both ways, so both kinds of cursor behave alike.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from psycopg import sql

type Cursor = Any
"""A DB-API cursor on the job's database: Django's ``connections[alias].cursor()``
or, in the worker, a psycopg cursor. Django ships no types, so it is ``Any``."""

SCHEMA_VERSION = 1
"""The schema version this code speaks; see ``workhorse_schema``."""

MIGRATION_FOR_VERSION = {1: "0001_initial"}


@dataclass(slots=True)
class ClaimedJob:
    """A job handed to a worker by ``workhorse_claim_many_v1``. Treat it as
    read-only; it is not frozen only because frozen instances cost twice as
    much to build, a hundred at a time on the claim path."""

    job_id: int
    name: str
    queue: str
    payload: dict[str, Any]
    attempt: int
    max_attempts: int
    fence: int
    timeout: float | None
    lease_expires_at: datetime
    cancel_requested: bool
    unreadable: str | None = None
    """Set when the stored payload cannot be read by Python (a number beyond
    its digit limit or a float's range, nesting too deep for its decoder):
    what could not be read and why. ``payload`` is then empty, and the worker
    fails this attempt alone, without retry."""
    trace_context: str | None = None
    """The producer's trace context as stored (JSON text), if any."""
    waited: float | None = None
    """Seconds from the job's enqueue to this claim, on the database clock."""
    pickup: float | None = None
    """Seconds from the job's due time (``run_at``) to this claim, on the
    database clock: what the pickup histogram observes."""

    @property
    def trace(self) -> tuple[dict[str, str] | None, float | None] | None:
        """For tracing: the producer's trace context as a propagation carrier
        (None when there is none or it cannot be read) and ``waited``."""
        if self.trace_context is None:
            return None
        return _trace_context(self.trace_context), self.waited


@dataclass(frozen=True, slots=True)
class FailResult:
    """What ``workhorse_fail_many_v1`` decided for one failed run."""

    job_id: int
    ok: bool
    will_retry: bool
    run_at: datetime | None
    retry_in: float | None
    """Seconds until the retry, on the database clock."""
    attempt: int | None
    max_attempts: int | None
    canceled: bool = False
    """The job ended canceled: a canceled run, or a run that would have been
    retried of a job whose cancel was requested."""
    reason: str | None = None
    """For a canceled job, the reason the operator gave (if any)."""


@dataclass(frozen=True, slots=True)
class Recovered:
    """One job taken back from an expired lease by ``workhorse_recover_stalled_v1``."""

    job_id: int
    queue: str
    attempt: int
    stall_count: int
    failed: bool
    """True when the job stalled past its max_stalled and ended failed."""
    name: str
    max_attempts: int
    max_stalled: int
    canceled: bool = False
    """True when an operator had asked to cancel the job: it ended canceled."""


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(
            f"the number {text[:30]}{'...' if len(text) > 30 else ''} is beyond a float"
        )
    return value


def _loads(value: Any) -> Any:
    """JSON text from the database as Python values.

    jsonb holds numbers Python refuses (more digits than
    ``sys.get_int_max_str_digits()``) or would silently turn into an infinity
    (``1e400``), and nesting deeper than its decoder's recursion limit: those
    raise ValueError or RecursionError, for the caller to isolate.
    """
    if value == "{}":
        return {}  # the payload of every job without arguments
    if isinstance(value, str | bytes):
        return json.loads(value, parse_float=_finite_float)
    return value


def _readable(value: Any, what: str) -> tuple[Any, str | None]:
    """``(decoded, None)``, or ``(None, why)`` when ``what`` cannot be read."""
    try:
        return _loads(value), None
    except (ValueError, RecursionError) as exc:
        reason = "it nests too deep" if isinstance(exc, RecursionError) else str(exc)
        return None, f"{what} cannot be read by Python's JSON decoder: {reason}"


def _ints(values: Sequence[int]) -> str:
    """An integer array literal, for a ``%s::bigint[]`` parameter.

    Built as text because the finish and claim calls pass a hundred ids at a
    time and psycopg's list dumper costs ~20 times more per call.
    """
    return "{" + ",".join(map(str, values)) + "}"


def _names(values: Sequence[str]) -> str:
    """A text array literal, every element quoted (``"`` and ``\\`` escaped)."""
    quoted = (v.replace("\\", "\\\\").replace('"', '\\"') for v in values)
    return "{" + ",".join(f'"{v}"' for v in quoted) + "}"


JSONB_ARRAY = (
    "ARRAY(SELECT t.v FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS t(v, i) ORDER BY t.i)"
)
"""A ``jsonb[]`` argument sent as one JSON array text (see ``_json_list``)."""


def _json_list(texts: Sequence[str]) -> str:
    """JSON texts as one JSON array text, for ``JSONB_ARRAY``: the server parses
    it in one go instead of psycopg quoting every element into an array literal."""
    return "[" + ",".join(texts) + "]"


def enqueue_many(cursor: Cursor, jobs_json: str) -> list[tuple[int, bool]]:
    """Insert the jobs of a JSON array; ``(job_id, inserted)`` per job, in order."""
    cursor.execute("SELECT job_id, inserted FROM workhorse_enqueue_many_v1(%s::jsonb)", [jobs_json])
    return [(row[0], row[1]) for row in cursor.fetchall()]


@dataclass(frozen=True, slots=True)
class JobOptionsRow:
    """What one ``enqueue`` or ``enqueue_many`` call gives every job it writes:
    the options of ``workhorse_enqueue_batch_v1``, every default filled in."""

    name: str
    queue: str
    max_attempts: int
    priority: int
    delay: float | None
    run_at: datetime | None
    idempotency_key: str | None
    timeout: float | None
    backoff_json: str | None
    max_stalled: int
    trace_json: str | None
    statement: str = field(init=False, repr=False, compare=False)
    """The call of ``workhorse_enqueue_batch_v1`` with the job type's options
    written in (``batch_statement``); the rest are its parameters."""

    def __post_init__(self) -> None:
        statement = batch_statement(
            self.name,
            self.queue,
            self.max_attempts,
            self.priority,
            self.timeout,
            self.backoff_json,
            self.max_stalled,
        )
        object.__setattr__(self, "statement", statement)

    def parameters(self, payloads_json: str) -> list[Any]:
        """The parameters of ``statement``, in order: what may differ from one
        call to the next, and what the caller's data holds."""
        return [payloads_json, self.delay, self.run_at, self.idempotency_key, self.trace_json]


@functools.lru_cache(maxsize=1024)
def batch_statement(
    name: str,
    queue: str,
    max_attempts: int,
    priority: int,
    timeout: float | None,
    backoff_json: str | None,
    max_stalled: int,
) -> str:
    """The SQL of a ``workhorse_enqueue_batch_v1`` call with a job type's own
    options as literals, and placeholders for the payloads, delay, run_at,
    idempotency key and trace context.

    Django's psycopg cursor binds on the client: it writes every parameter
    into the statement as a literal on every call, and those of a job type
    are the same each time. They are written here once (by psycopg's own
    adapters, so the server gets the text it got when they were parameters)
    and the driver adapts five parameters instead of twelve, four of them
    usually None (docs/decisions.md, "The single enqueue's own cost"). The
    caller's data (payloads, key, trace context) stays in the parameters,
    out of the SQL text that tools such as tracers record.
    """

    def literal(value: object) -> str:
        # Doubled: the statement goes through psycopg's placeholder parsing.
        return sql.Literal(value).as_string(None).replace("%", "%%")

    return (
        f"SELECT job_id, inserted FROM workhorse_enqueue_batch_v1({literal(name)}, %s::jsonb, "
        f"{literal(queue)}, {literal(max_attempts)}, {literal(priority)}, %s, %s, %s, "
        f"{literal(timeout)}, {literal(backoff_json)}::jsonb, {literal(max_stalled)}, %s::jsonb)"
    )


def enqueue_batch(
    cursor: Cursor, options: JobOptionsRow, payloads_json: str
) -> list[tuple[int, bool]]:
    """Insert one job per payload of a JSON array (one or many), all with
    ``options`` and no prerequisites; ``(job_id, inserted)`` per payload, in
    order. With an idempotency key they resolve to the one job that holds it."""
    cursor.execute(options.statement, options.parameters(payloads_json))
    return [(row[0], row[1]) for row in cursor.fetchall()]


def lock_prerequisites(cursor: Cursor, job_ids: Sequence[int]) -> list[int]:
    """Hold the jobs ``job_ids`` until the transaction ends, so retention
    cannot delete them before the enqueue that names them; those that no
    job has, ascending."""
    cursor.execute(
        "SELECT missing_id FROM workhorse_lock_prerequisites_v1(%s::bigint[])",
        [_ints(job_ids)],
    )
    return [row[0] for row in cursor.fetchall()]


def claim_many(
    cursor: Cursor,
    worker_id: str,
    queues: Sequence[str],
    limits: Sequence[int],
    lease_seconds: float,
    *,
    flush: bool = True,
) -> list[ClaimedJob]:
    """Claim up to ``limits[i]`` ready jobs of ``queues[i]`` for ``worker_id``.

    ``flush=False`` commits the claim without waiting for its WAL flush
    (``UNFLUSHED``): the worker's claims, on an autocommit connection."""
    cursor.execute(
        _CLAIM if flush else _CLAIM_UNFLUSHED,
        [worker_id, _names(queues), _ints(limits), lease_seconds],
    )
    return [_claimed(r) for r in cursor.fetchall()]


UNFLUSHED = " CROSS JOIN set_config('synchronous_commit', 'off', true) AS unflushed"
"""Appended to a claim's FROM: its autocommit transaction commits without
waiting for the WAL flush (docs/decisions.md), and only that transaction. A
session ``SET synchronous_commit = off`` would stay on the server connection
for whoever gets it next behind a transaction-mode pooler (the application's
own transactions included). set_config(..., true) ends with the statement's
transaction; it only matters at the commit, so the order the two run in
does not (a claim of no rows may commit flushed: it wrote little or nothing)."""

_CLAIM = "SELECT c.* FROM workhorse_claim_many_v1(%s, %s::text[], %s::integer[], %s) AS c"
_CLAIM_UNFLUSHED = _CLAIM + UNFLUSHED


_SUCCEED_AND_CLAIM = (
    "SELECT * FROM workhorse_succeed_and_claim_v1(%s, %s::bigint[], %s::bigint[],"
    f" {JSONB_ARRAY}, %s::text[], %s::integer[], %s)"
)
"""Built once: psycopg keeps a cursor's loaders for the next call only when
it is given the very same query object (a one-slot worker makes this call
once per job on one cursor)."""


def succeed_and_claim(
    cursor: Cursor,
    worker_id: str,
    job_ids: Sequence[int],
    fences: Sequence[int],
    results_json: Sequence[str],
    queues: Sequence[str],
    limits: Sequence[int],
    lease_seconds: float,
) -> tuple[list[tuple[int, bool]], list[ClaimedJob]]:
    """Record successes, then claim, in one round trip and one transaction:
    ``(job_id, ok)`` per success as ``succeed_many`` returns them, and the
    jobs claimed as ``claim_many`` does. A worker with one slot pays one
    call per job instead of two (docs/decisions.md)."""
    cursor.execute(
        _SUCCEED_AND_CLAIM,
        [
            worker_id,
            _ints(job_ids),
            _ints(fences),
            _json_list(results_json),
            _names(queues),
            _ints(limits),
            lease_seconds,
        ],
    )
    rows = cursor.fetchall()
    n = len(job_ids)
    return [(r[0], r[1]) for r in rows[:n]], [_claimed((r[0], *r[2:])) for r in rows[n:]]


def _claimed(r: Sequence[Any]) -> ClaimedJob:
    """A claim's row as a ClaimedJob; a payload nobody can read is marked.

    One job nobody can read must not take its batch-mates down: it is handed
    over marked (``unreadable``), for the worker to fail alone.
    """
    try:
        payload = _loads(r[3])
    except (ValueError, RecursionError):
        _, why = _readable(r[3], f"the stored payload of job #{r[0]}")
        return ClaimedJob(
            r[0], r[1], r[2], {}, r[4], r[5], r[6], r[7], r[8], r[9], why, r[10], r[11], r[12]
        )
    return ClaimedJob(
        r[0], r[1], r[2], payload, r[4], r[5], r[6], r[7], r[8], r[9], None, r[10], r[11], r[12]
    )


def heartbeat_many(
    cursor: Cursor,
    worker_id: str,
    job_ids: Sequence[int],
    fences: Sequence[int],
    lease_seconds: float,
    worker_info_json: str | None = None,
) -> list[tuple[int, bool, bool]]:
    """Renew leases; ``(job_id, renewed, cancel_requested)`` per job. With
    ``worker_info_json`` the call also records the worker as seen now, for
    the workers view (``list_workers``)."""
    cursor.execute(
        "SELECT job_id, renewed, cancel_requested"
        " FROM workhorse_heartbeat_many_v1(%s, %s::bigint[], %s::bigint[], %s, %s::jsonb)",
        [worker_id, _ints(job_ids), _ints(fences), lease_seconds, worker_info_json],
    )
    return [(r[0], r[1], r[2]) for r in cursor.fetchall()]


def pulse(cursor: Cursor, worker_id: str, seconds: float) -> bool:
    """Prove ``worker_id`` alive for ``seconds`` from now on the database
    clock (``workhorse_pulse_v1``): on the worker's direct connection only,
    whose application name it sets. It reads and locks no table. Returns
    whether the worker leads the fleet's sweeps."""
    cursor.execute("SELECT leads FROM workhorse_pulse_v1(%s, %s)", [worker_id, seconds])
    row = cursor.fetchone()
    return bool(row and row[0])


def live_workers(cursor: Cursor) -> set[str]:
    """The keys (``worker_key``) of the workers whose liveness proof is current."""
    cursor.execute("SELECT workhorse_live_workers_v1()")
    row = cursor.fetchone()
    return set(row[0]) if row else set()


def worker_key(cursor: Cursor, owner: str) -> str:
    """The key of the liveness proof of the worker behind an owner name."""
    cursor.execute("SELECT workhorse_worker_key_v1(%s)", [owner])
    row = cursor.fetchone()
    assert row is not None
    return str(row[0])


def succeed_many(
    cursor: Cursor,
    worker_id: str,
    job_ids: Sequence[int],
    fences: Sequence[int],
    results_json: Sequence[str],
) -> list[tuple[int, bool]]:
    """Record successes; ``(job_id, ok)`` per job, ok False for a lost lease."""
    cursor.execute(
        "SELECT job_id, ok"
        f" FROM workhorse_succeed_many_v1(%s, %s::bigint[], %s::bigint[], {JSONB_ARRAY})",
        [worker_id, _ints(job_ids), _ints(fences), _json_list(results_json)],
    )
    return [(r[0], r[1]) for r in cursor.fetchall()]


def fail_many(
    cursor: Cursor,
    worker_id: str,
    job_ids: Sequence[int],
    fences: Sequence[int],
    errors_json: Sequence[str],
    kinds: Sequence[str],
    retryable: Sequence[bool],
    delays: Sequence[float | None],
) -> list[FailResult]:
    """Record failures; the SQL decides retry or terminal from budget and backoff."""
    cursor.execute(
        "SELECT * FROM workhorse_fail_many_v1(%s, %s::bigint[], %s::bigint[],"
        f" {JSONB_ARRAY}, %s::text[], %s::boolean[], %s::double precision[])",
        [
            worker_id,
            _ints(job_ids),
            _ints(fences),
            _json_list(errors_json),
            list(kinds),
            list(retryable),
            list(delays),
        ],
    )
    return [FailResult(*row) for row in cursor.fetchall()]


def release_many(
    cursor: Cursor, worker_id: str, job_ids: Sequence[int], fences: Sequence[int]
) -> list[tuple[int, bool, bool]]:
    """Give running jobs back to ready without consuming an attempt;
    ``(job_id, ok, canceled)`` per job, canceled True for a job whose cancel
    was requested (it ends canceled instead)."""
    cursor.execute(
        "SELECT job_id, ok, canceled"
        " FROM workhorse_release_many_v1(%s, %s::bigint[], %s::bigint[])",
        [worker_id, _ints(job_ids), _ints(fences)],
    )
    return [(r[0], r[1], r[2]) for r in cursor.fetchall()]


def lock_runs(cursor: Cursor, worker_id: str, job_ids: Sequence[int], fences: Sequence[int]) -> int:
    """Lock, in job_id order, the runtime rows of the runs ``worker_id`` holds
    under ``fences``, for a transaction that writes them with several calls
    (``workhorse_lock_runs_v1``); how many it locked."""
    cursor.execute(
        "SELECT workhorse_lock_runs_v1(%s, %s::bigint[], %s::bigint[])",
        [worker_id, _ints(job_ids), _ints(fences)],
    )
    return cast("int", cursor.fetchone()[0])


def sleep_many(
    cursor: Cursor,
    worker_id: str,
    job_ids: Sequence[int],
    fences: Sequence[int],
    names: Sequence[str],
    wake_ats: Sequence[datetime | None],
    delays: Sequence[float | None],
) -> list[tuple[int, bool, datetime | None, bool]]:
    """Put running jobs to sleep until ``wake_ats[i]`` (or ``delays[i]``
    seconds from now on the database clock); ``(job_id, ok, run_at, canceled)``
    per job, ok False for a lost lease, canceled True for a job whose cancel
    was requested (it ends canceled instead of sleeping)."""
    cursor.execute(
        "SELECT job_id, ok, run_at, canceled FROM workhorse_sleep_many_v1(%s, %s::bigint[],"
        " %s::bigint[], %s::text[], %s::timestamptz[], %s::double precision[])",
        [worker_id, _ints(job_ids), _ints(fences), _names(names), list(wake_ats), list(delays)],
    )
    return [(r[0], r[1], r[2], r[3]) for r in cursor.fetchall()]


@dataclass(frozen=True, slots=True)
class CheckpointRow:
    """One recorded stage or sleep of a job (``workhorse_job_checkpoint``)."""

    name: str
    kind: str
    """'checkpoint' or 'sleep'."""
    result: Any
    """The stage's JSON result, as text when Python cannot decode it; for a
    sleep ``{"wake_at": ...}``."""
    written_at: datetime
    attempt: int
    unreadable: str | None = None
    """Why Python could not decode the stored result (only SQL callers can
    store such JSON), or None; ``result`` is then the JSON text."""

    def wake_time(self) -> datetime | None:
        """The wake time a sleep row records, or None."""
        if self.kind != "sleep" or not isinstance(self.result, dict):
            return None
        try:
            return datetime.fromisoformat(self.result["wake_at"])
        except (KeyError, TypeError, ValueError):
            return None


def get_checkpoints(cursor: Cursor, job_id: int) -> list[CheckpointRow]:
    """The recorded stages and sleeps of one job, oldest first."""
    cursor.execute("SELECT * FROM workhorse_get_checkpoints_v1(%s)", [job_id])
    rows = []
    for name, kind, raw, written_at, attempt in cursor.fetchall():
        decoded, why = _readable(raw, f"checkpoint {name!r}")
        rows.append(CheckpointRow(name, kind, raw if why else decoded, written_at, attempt, why))
    return rows


def write_checkpoint(
    cursor: Cursor, job_id: int, owner: str, fence: int, name: str, result_json: str
) -> tuple[bool, bool]:
    """Record one stage under the run's fence: ``(ok, cancel_requested)``,
    ok False when the run no longer holds the job."""
    cursor.execute(
        "SELECT ok, cancel_requested FROM workhorse_checkpoint_v1(%s, %s, %s, %s, %s::jsonb)",
        [job_id, owner, fence, name, result_json],
    )
    ok, cancel_requested = cursor.fetchone()
    return ok, cancel_requested


def recover_stalled(cursor: Cursor, limit: int = 1000) -> list[Recovered]:
    """Take back up to ``limit`` jobs whose lease expired."""
    cursor.execute("SELECT * FROM workhorse_recover_stalled_v1(%s)", [limit])
    return [Recovered(*row) for row in cursor.fetchall()]


def next_run_at(cursor: Cursor, queues: Sequence[str]) -> datetime | None:
    """The earliest run_at of a scheduled job in ``queues``, or None."""
    cursor.execute("SELECT workhorse_next_run_at_v1(%s::text[])", [list(queues)])
    return cast("datetime | None", cursor.fetchone()[0])


def next_run_at_and_clock(
    cursor: Cursor, queues: Sequence[str]
) -> tuple[datetime | None, datetime]:
    """``next_run_at`` and the database's clock as it answered
    (``clock_timestamp()``), so that a worker can time its wait for that
    run_at on the database's clock rather than its own."""
    cursor.execute("SELECT workhorse_next_run_at_v1(%s::text[]), clock_timestamp()", [list(queues)])
    next_at, clock = cursor.fetchone()
    return next_at, clock


def ensure_partitions(cursor: Cursor, days_ahead: int) -> int:
    """Create the history partitions from yesterday to ``days_ahead`` days on."""
    cursor.execute(
        "SELECT workhorse_ensure_partitions_v1((now() AT TIME ZONE 'UTC')::date - 1, %s)",
        [days_ahead + 2],
    )
    return cast("int", cursor.fetchone()[0])


def get_job(cursor: Cursor, job_id: int) -> dict[str, Any] | None:
    """One job's snapshot row as a dict, or None when there is no such job."""
    cursor.execute("SELECT * FROM workhorse_get_job_v1(%s)", [job_id])
    row = cursor.fetchone()
    if row is None:
        return None
    names = [col[0] for col in cursor.description]
    return _snapshot_row(dict(zip(names, row, strict=True)))


def get_jobs(cursor: Cursor, job_ids: Sequence[int]) -> list[dict[str, Any]]:
    """The snapshot rows of the jobs of ``job_ids`` that exist, in that order."""
    cursor.execute(
        "SELECT g.* FROM unnest(%s::bigint[]) WITH ORDINALITY AS u(id, ord)"
        " CROSS JOIN LATERAL workhorse_get_job_v1(u.id) AS g ORDER BY u.ord",
        [_ints(job_ids)],
    )
    names = [col[0] for col in cursor.description]
    return [_snapshot_row(dict(zip(names, row, strict=True))) for row in cursor.fetchall()]


def _snapshot_row(snapshot: dict[str, Any]) -> dict[str, Any]:
    for key in ("payload", "result", "error"):
        decoded, why = _readable(snapshot[key], key)
        # A value Python cannot decode is shown as its JSON text, not hidden.
        snapshot[key] = snapshot[key] if why else decoded
    for key in ("prerequisites", "dependents"):
        snapshot[key] = _loads(snapshot[key])
    return snapshot


def schema_version(cursor: Cursor) -> int | None:
    """The installed schema version, or None when the tables are not there."""
    cursor.execute("SELECT to_regclass('workhorse_schema') IS NOT NULL")
    if not cursor.fetchone()[0]:
        return None
    cursor.execute("SELECT version FROM workhorse_schema")
    row = cursor.fetchone()
    return row[0] if row else None


def schema_problem(installed: int | None) -> str | None:
    """Why the installed schema cannot be used by this code, or None when it can."""
    if installed == SCHEMA_VERSION:
        return None
    target = MIGRATION_FOR_VERSION[SCHEMA_VERSION]
    if installed is None:
        return (
            "the django-workhorse tables are not installed in this database: "
            f"run `manage.py migrate django_workhorse` (to {target})"
        )
    if installed < SCHEMA_VERSION:
        return (
            f"the database has django-workhorse schema version {installed}, this code needs "
            f"{SCHEMA_VERSION}: run `manage.py migrate django_workhorse {target}`"
        )
    return (
        f"the database has django-workhorse schema version {installed}, newer than the "
        f"{SCHEMA_VERSION} this code speaks: upgrade django-workhorse on this machine"
    )


@dataclass(frozen=True, slots=True)
class InstalledFunction:
    """A ``workhorse_*`` function as the catalog has it."""

    name: str
    arguments: str
    body_sha256: str
    language: str
    volatility: str
    strict: bool
    definer: bool
    parallel: str
    settings: list[str]
    schema: str
    """The schema it is in, quoted as an identifier if it needs it."""
    signature: str = ""
    """Its name and arguments as the database quotes them
    (``quote_ident``): what messages show, whatever the name holds."""
    oid: int = 0
    """Its catalog id, by which :func:`drop_function` drops it."""


def installed_functions(cursor: Cursor) -> list[InstalledFunction]:
    """The ``workhorse_*`` functions of the current schema, in one catalog read.

    The body's digest is computed by the server (sha256 of ``prosrc``, the
    text between the dollar quotes as it was written), so the bodies
    themselves do not travel."""
    cursor.execute(
        """
        SELECT p.proname, pg_get_function_identity_arguments(p.oid),
               encode(sha256(convert_to(p.prosrc, 'UTF8')), 'hex'), l.lanname,
               p.provolatile, p.proisstrict, p.prosecdef, p.proparallel,
               coalesce(p.proconfig, '{}'), quote_ident(n.nspname),
               quote_ident(p.proname) || '(' || pg_get_function_identity_arguments(p.oid)
               || ')',
               p.oid::bigint
        FROM pg_proc p
        JOIN pg_namespace n ON n.oid = p.pronamespace
        JOIN pg_language l ON l.oid = p.prolang
        WHERE n.nspname = current_schema() AND p.proname LIKE 'workhorse\\_%'
        ORDER BY 1, 2
        """
    )
    return [
        InstalledFunction(  # type: ignore[misc]
            *row[:8], settings=list(row[8]), schema=row[9], signature=row[10], oid=row[11]
        )
        for row in cursor.fetchall()
    ]


def drop_function(cursor: Cursor, oid: int) -> None:
    """Drop the function of catalog id ``oid``.

    A function's name is whatever its creator wrote between double quotes
    (spaces, capitals, quotes, semicolons and statements), so it is never
    put into SQL as read from ``pg_proc``: the database names the function
    itself, ``oid::regprocedure`` being its schema, name and argument types
    quoted as identifiers."""
    cursor.execute("SELECT %s::oid::regprocedure::text", [oid])
    (signature,) = cursor.fetchone()
    cursor.execute("DROP FUNCTION " + signature)


def applied_migrations(cursor: Cursor, app: str) -> list[str]:
    """The names of ``app``'s migrations recorded as applied in this database."""
    cursor.execute("SELECT to_regclass('django_migrations') IS NOT NULL")
    if not cursor.fetchone()[0]:
        return []
    cursor.execute("SELECT name FROM django_migrations WHERE app = %s ORDER BY id", [app])
    return [name for (name,) in cursor.fetchall()]


# -- repeatable schedules, queue depth, claimed-job details -------------------


@dataclass(frozen=True, slots=True)
class DueSchedule:
    """A running schedule whose slot is due, or that has no slot planned yet."""

    name: str
    cron: str
    timezone: str
    catch_up: str
    next_run_at: datetime | None
    db_now: datetime
    job_name: str
    """The registered job each slot enqueues."""
    queue: str
    """The queue of the jobs it enqueues."""
    unreadable: str | None = None
    """Set when the stored ``next_run_at`` is outside the years Python reads
    (``'-infinity'`` written by hand, say): what it is and the fix.
    ``next_run_at`` is then None, and the sweep leaves the schedule alone."""


def sync_schedules(cursor: Cursor, schedules_json: str) -> dict[str, str]:
    """Make workhorse_schedule hold exactly the schedules of a JSON array;
    ``{name: 'added' | 'updated' | 'unchanged' | 'removed'}``."""
    cursor.execute(
        "SELECT name, action FROM workhorse_schedule_sync_v1(%s::jsonb)", [schedules_json]
    )
    return {row[0]: row[1] for row in cursor.fetchall()}


def due_schedules(cursor: Cursor) -> list[DueSchedule]:
    """The schedules a sweep must look at, with the database clock."""
    cursor.execute("SELECT * FROM workhorse_schedule_due_v1()")
    return [DueSchedule(*row) for row in cursor.fetchall()]


def fire_schedule(
    cursor: Cursor,
    name: str,
    expected: datetime | None,
    slots: Sequence[datetime],
    next_run_at: datetime,
) -> list[tuple[datetime, int, bool]]:
    """Take ``slots`` of a schedule if its planned slot is still ``expected``;
    ``(slot, job_id, inserted)`` per slot, nothing when another sweep took them."""
    cursor.execute(
        "SELECT slot_at, job_id, inserted"
        " FROM workhorse_schedule_fire_v1(%s, %s, %s::timestamptz[], %s)",
        [name, expected, list(slots), next_run_at],
    )
    return [(r[0], r[1], r[2]) for r in cursor.fetchall()]


@dataclass(frozen=True)
class ScheduleRow:
    """One schedule as the table holds it, for the operator's views."""

    name: str
    job_name: str
    """The registered job each slot enqueues."""
    queue: str | None
    """The queue of the jobs it enqueues."""
    cron: str
    timezone: str
    catch_up: str
    paused: bool
    next_run_at: datetime | None
    """The next slot the fleet owes; None until a sweep plans it."""
    last_slot_at: datetime | None
    """The latest slot a sweep enqueued."""
    last_job_id: int | None
    """The job enqueued for ``last_slot_at``."""
    unreadable: str | None = None
    """Set when a stored time is outside the years 1 to 9999 (UTC) that
    Python reads (only a hand-written UPDATE stores one): which, and the fix.
    That time is then None here."""


def list_schedules(cursor: Cursor) -> list[ScheduleRow]:
    """Every schedule with its next run, by name."""
    cursor.execute("SELECT * FROM workhorse_list_schedules_v1()")
    return [ScheduleRow(*row) for row in cursor.fetchall()]


def set_schedule_paused(cursor: Cursor, name: str, paused: bool) -> bool:
    """Pause or resume a schedule; False when there is no schedule ``name``."""
    cursor.execute("SELECT workhorse_schedule_set_paused_v1(%s, %s)", [name, paused])
    return cast("bool", cursor.fetchone()[0])


def queue_depth(cursor: Cursor) -> list[tuple[str, str, int]]:
    """``(queue, state, jobs)`` for every live job, grouped."""
    cursor.execute("SELECT queue, state, jobs FROM workhorse_queue_depth_v1()")
    return [(r[0], r[1], r[2]) for r in cursor.fetchall()]


@dataclass(frozen=True, slots=True)
class VacuumCandidate:
    """A table with churn from ``workhorse_vacuum_due_v1``: due for a VACUUM,
    or one the connected role may not vacuum (or both)."""

    table: str
    dead_tuples: int
    """Dead tuples of the table and its TOAST table, per the statistics."""
    live_tuples: int
    due: bool
    """Over the threshold, and not vacuumed within the quiet window."""
    may_vacuum: bool
    """False when VACUUM by this role would only warn and do nothing."""


def vacuum_due(cursor: Cursor, quiet_for: float) -> list[VacuumCandidate]:
    """The tables with churn that need a VACUUM (none vacuumed them in the
    last ``quiet_for`` seconds), and those this role may not vacuum."""
    cursor.execute("SELECT * FROM workhorse_vacuum_due_v1(make_interval(secs => %s))", [quiet_for])
    return [VacuumCandidate(*row) for row in cursor.fetchall()]


def vacuum_table(cursor: Cursor, table: str) -> list[tuple[str | None, str]]:
    """``VACUUM (SKIP_LOCKED) table`` on a psycopg cursor in autocommit mode
    (VACUUM cannot run in a transaction); returns the server's warnings as
    ``(sqlstate, message)``, e.g. ``55P03`` for a table skipped because
    another session (autovacuum, a migration) holds a conflicting lock.

    SKIP_LOCKED: a VACUUM waiting for its lock would make autovacuum cancel
    itself, or queue behind a migration; the next turn tries again instead.
    """
    warnings: list[tuple[str | None, str]] = []

    def keep(diagnostic: Any) -> None:
        if diagnostic.severity_nonlocalized == "WARNING":
            warnings.append((diagnostic.sqlstate, diagnostic.message_primary or ""))

    connection = cursor.connection
    connection.add_notice_handler(keep)
    try:
        cursor.execute(sql.SQL("VACUUM (SKIP_LOCKED) {}").format(sql.Identifier(table)))
    finally:
        connection.remove_notice_handler(keep)
    return warnings


def _trace_context(raw: str | None) -> dict[str, str] | None:
    """A stored trace context as a propagation carrier (text keys to text
    values), or None when there is none or it cannot be read (a run is never
    refused for its tracing data). A writer outside Python can store any
    JSON there: what is not text is left out, as OpenTelemetry's propagators
    would fail on it."""
    if not raw:
        return None
    try:
        stored = _loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(stored, dict):
        return None
    carrier = {k: v for k, v in stored.items() if isinstance(v, str)}
    return carrier or None


@dataclass(frozen=True, slots=True)
class AttemptRow:
    """One closed run of a job, from ``workhorse_get_attempts_v1``."""

    attempt: int
    outcome: str
    """succeeded, failed, timed_out, stalled or canceled."""
    worker_id: str
    started_at: datetime
    finished_at: datetime
    error: dict[str, Any] | None


def get_attempts(cursor: Cursor, job_id: int) -> list[AttemptRow]:
    """The closed runs of one job, oldest first."""
    cursor.execute("SELECT * FROM workhorse_get_attempts_v1(%s)", [job_id])
    return [AttemptRow(r[0], r[1], r[2], r[3], r[4], _loads(r[5])) for r in cursor.fetchall()]


def make_due(cursor: Cursor, queues: Sequence[str]) -> int:
    """Make the scheduled jobs of ``queues`` due now; how many moved."""
    cursor.execute("SELECT workhorse_make_due_v1(%s::text[])", [_names(queues)])
    return cast("int", cursor.fetchone()[0])


def live_queues(cursor: Cursor, names: Sequence[str] | None = None) -> list[str]:
    """The queues holding a live job (of one of ``names``, when given), in name order."""
    if names is None:
        cursor.execute("SELECT queue FROM workhorse_live_queues_v1()")
    else:
        cursor.execute("SELECT queue FROM workhorse_live_queues_v1(%s::text[])", [_names(names)])
    return [row[0] for row in cursor.fetchall()]


JOB_TABLES = (
    "workhorse_bulk_action",
    "workhorse_job_checkpoint",
    "workhorse_job_runtime",
    "workhorse_job_outcome",
    "workhorse_job_query",
    "workhorse_job_dependency",
    "workhorse_job_event",
    "workhorse_attempt_history",
    "workhorse_queue",
    "workhorse_job",
)
"""Every table holding jobs or queue policy, children first."""


def delete_every_job(cursor: Cursor) -> None:
    """Delete every job, its history and queue policy: for test teardown only
    (``django_workhorse.testing``), where Django's flush leaves these
    unmanaged tables alone. DELETE, not TRUNCATE: a test leaves few rows."""
    for table in JOB_TABLES:
        cursor.execute(f"DELETE FROM {table}")


@dataclass(frozen=True, slots=True)
class QueueLimits:
    """What ``workhorse_set_queue_limits_v1`` did and the limits now in force."""

    status: str
    """'changed' or 'unchanged'."""
    concurrency: int | None
    rate: int | None
    period: float | None
    """Seconds of the rate's period; None with ``rate``."""


def set_queue_limits(
    cursor: Cursor, queue: str, concurrency: int | None, rate: int | None, period: float | None
) -> QueueLimits:
    """Set (or, with None, remove) the concurrency and rate limits of ``queue``."""
    cursor.execute(
        "SELECT * FROM workhorse_set_queue_limits_v1(%s, %s, %s, %s::double precision)",
        [queue, concurrency, rate, period],
    )
    return QueueLimits(*cursor.fetchone())


# The operator's view: reads, actions and retention (see operations/admin_api.py).


def _dict_rows(cursor: Cursor) -> list[dict[str, Any]]:
    names = [col[0] for col in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def job_timeline(
    cursor: Cursor,
    job_id: int,
    after: tuple[datetime, int, int] | None,
    limit: int,
) -> list[dict[str, Any]]:
    """Up to ``limit`` timeline rows of one job after the (at, rank, id) key ``after``."""
    at, rank, row_id = after if after is not None else (None, None, None)
    cursor.execute(
        "SELECT * FROM workhorse_job_timeline_v1(%s, %s, %s, %s, %s)",
        [job_id, at, rank, row_id, limit],
    )
    rows = _dict_rows(cursor)
    for row in rows:
        for key in ("error", "data"):
            decoded, why = _readable(row[key], key)
            # As in a snapshot: a value Python cannot decode (a SQL caller may
            # store one) is shown as its JSON text, and the rest of the
            # timeline still reads.
            row[key] = row[key] if why else decoded
    return rows


def list_jobs(
    cursor: Cursor,
    *,
    queue: str | None,
    name: str | None,
    state: str | None,
    created_after: datetime | None,
    created_before: datetime | None,
    before_id: int | None,
    after_id: int | None,
    limit: int,
    idempotency_key: str | None = None,
    error_type: str | None = None,
    name_prefix: str | None = None,
    payload_json: str | None = None,
) -> list[dict[str, Any]]:
    """A page of job rows, newest first (see ``workhorse_list_jobs_v1``)."""
    cursor.execute(
        "SELECT * FROM workhorse_list_jobs_v1(%s, %s, %s, %s, %s, %s, %s, %s, %s,"
        " %s, %s, %s::jsonb)",
        [
            queue,
            name,
            state,
            created_after,
            created_before,
            before_id,
            after_id,
            limit,
            idempotency_key,
            error_type,
            name_prefix,
            payload_json,
        ],
    )
    return _dict_rows(cursor)


def queue_stats(
    cursor: Cursor, window_seconds: float, buckets: int, count_limit: int | None = None
) -> list[dict[str, Any]]:
    """One row per queue: live counts (exact, or up to ``count_limit``), recent
    terminal counts, throughput buckets, limits."""
    cursor.execute(
        "SELECT * FROM workhorse_queue_stats_v1(make_interval(secs => %s), %s, %s)",
        [window_seconds, buckets, count_limit],
    )
    return _dict_rows(cursor)


def queue_names(cursor: Cursor) -> list[str]:
    """Every queue with a job or a policy row, in name order."""
    cursor.execute("SELECT queue FROM workhorse_queue_names_v1()")
    return [row[0] for row in cursor.fetchall()]


def payload_index_exists(cursor: Cursor) -> bool:
    """Whether the operator made ``workhorse_job_payload_gin`` (docs/admin.md,
    "Search"): payload search then covers every job, not live ones only."""
    cursor.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_class c WHERE c.relname = 'workhorse_job_payload_gin'"
        " AND c.relkind = 'i' AND c.relnamespace = (SELECT t.relnamespace FROM pg_class t"
        " WHERE t.oid = 'workhorse_job'::regclass))"
    )
    return bool(cursor.fetchone()[0])


def failures(cursor: Cursor, window_seconds: float) -> list[dict[str, Any]]:
    """Failed jobs of the window by name and error type (``workhorse_failures_v2``):
    name, error_type, failures, last_job_id, last_at (None when outside the
    years 1 to 9999) and unreadable (why, or None)."""
    cursor.execute(
        "SELECT * FROM workhorse_failures_v2(make_interval(secs => %s))", [window_seconds]
    )
    return _dict_rows(cursor)


def count_jobs(
    cursor: Cursor,
    *,
    queue: str | None,
    name: str | None,
    state: str | None,
    created_after: datetime | None,
    created_before: datetime | None,
    cap: int,
) -> int:
    """Jobs matching the job list's filters, counted up to ``cap``."""
    cursor.execute(
        "SELECT workhorse_count_jobs_v1(%s, %s, %s, %s, %s, %s)",
        [queue, name, state, created_after, created_before, cap],
    )
    return cast("int", cursor.fetchone()[0])


def notify(cursor: Cursor, channel: str, payload: str) -> None:
    """``pg_notify(channel, payload)``: sent when the statement's transaction commits."""
    cursor.execute("SELECT pg_notify(%s, %s)", [channel, payload])


def list_workers(cursor: Cursor, seen_within_seconds: float) -> list[dict[str, Any]]:
    """Workers whose heartbeat was seen within the last ``seen_within_seconds``:
    worker_id, info (decoded), first_seen_at, last_seen_at, seen_seconds_ago,
    unreadable (its times Python cannot read, and the fix, or None) and
    info_unreadable. A time outside the years 1 to 9999 comes back None
    (``workhorse_list_workers_v2``); an info its JSON decoder refuses (a
    number of 5,000 digits, nesting deeper than it reads) comes back ``{}``,
    with info_unreadable saying why."""
    cursor.execute(
        "SELECT * FROM workhorse_list_workers_v2(make_interval(secs => %s))",
        [seen_within_seconds],
    )
    rows = _dict_rows(cursor)
    for row in rows:
        info, row["info_unreadable"] = _readable(row["info"], "its info")
        row["info"] = info if isinstance(info, dict) else {}
    return rows


def worker_gone(cursor: Cursor, worker_id: str) -> None:
    """A stopping worker's registry row goes (``workhorse_worker_gone_v1``)."""
    cursor.execute("SELECT workhorse_worker_gone_v1(%s)", [worker_id])


WORKER_CONNECTION_ROLES = {
    "workhorse-worker": "claims",
    "workhorse-heartbeat": "leases",
    "workhorse-listener": "listen",
}
"""The application_name a worker gives each of its connections (followed by
its worker id, cut to fit: worker/connection.py), and the role it shows as."""


def worker_connections(cursor: Cursor) -> dict[str, dict[str, int]]:
    """The sessions the server has of each worker now, by worker id (as far
    as the application_name keeps it) and role (claims, leases, listen).

    Counted in ``pg_stat_activity``: exact for connections made to
    PostgreSQL directly. Behind a transaction-mode pooler a server
    connection carries the application_name of the client it served last,
    so there these are the pooled server connections that last served each
    worker (PgBouncer's ``SHOW CLIENTS`` lists the workers' own)."""
    cursor.execute(
        "SELECT substr(application_name, strpos(application_name, ' ') + 1) AS worker,"
        " split_part(application_name, ' ', 1) AS role, count(*)"
        " FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name ~ '^workhorse-(worker|heartbeat|listener) '"
        " GROUP BY 1, 2 ORDER BY 1, 2"
    )
    rows = cursor.fetchall()
    # A live listener's name carries its worker's liveness key, not its id
    # (workhorse_pulse_v1): the registry's full ids lead back to the worker,
    # shown under the name its other connections give (the id's tail).
    keyed = any(_PULSE_NAME.fullmatch(f"{role} {worker}") for worker, role, _ in rows)
    ids: dict[str, str] = {}
    if keyed:
        cursor.execute("SELECT workhorse_worker_key_v1(worker_id), worker_id FROM workhorse_worker")
        ids = dict(cursor.fetchall())
    tails = {worker for worker, _, _ in rows}
    found: dict[str, dict[str, int]] = {}
    for worker, role, count in rows:
        if _PULSE_NAME.fullmatch(f"{role} {worker}"):
            key = worker.rsplit(" ", 1)[-1]
            full = ids.get(key, key)
            worker = next((t for t in tails if t != worker and full.endswith(t)), full)
        held = found.setdefault(worker, {})
        name = WORKER_CONNECTION_ROLES[role]
        held[name] = held.get(name, 0) + count
    return found


_PULSE_NAME = re.compile(r"workhorse-listener [0-9]{1,15} [0-9a-f]{16}")
"""A live listener's application name (``workhorse_pulse_v1``)."""


def workers_holding_jobs(cursor: Cursor) -> list[dict[str, Any]]:
    """Workers with a live lease: (worker_id, jobs, lease_expires_at of the latest)."""
    cursor.execute(
        "SELECT worker_id, count(*) AS jobs, max(lease_expires_at) AS lease_expires_at"
        " FROM workhorse_job_runtime WHERE state = 'active'"
        " GROUP BY worker_id ORDER BY worker_id"
    )
    return _dict_rows(cursor)


def retry_job(
    cursor: Cursor, job_id: int, reason: str | None, ignore_dependencies: bool = False
) -> tuple[str, str | None, int | None, str | None]:
    """``(status, state, prerequisite, prerequisite_state)`` from
    ``workhorse_retry_v1``; the prerequisite is the one that refused it."""
    cursor.execute(
        "SELECT * FROM workhorse_retry_v1(%s, %s, %s)", [job_id, reason, ignore_dependencies]
    )
    return cast("tuple[str, str | None, int | None, str | None]", cursor.fetchone())


def promote_job(cursor: Cursor, job_id: int) -> tuple[str, str | None]:
    """``(status, state)`` from ``workhorse_promote_v1``."""
    cursor.execute("SELECT * FROM workhorse_promote_v1(%s)", [job_id])
    return cast("tuple[str, str | None]", cursor.fetchone())


def cancel_job(
    cursor: Cursor, job_id: int, reason: str | None, by: str | None = None
) -> tuple[str, str | None]:
    """``(status, state)`` from ``workhorse_cancel_v1``: 'changed', 'requested'
    (a running job's worker was asked), 'unchanged' or 'unknown'."""
    cursor.execute("SELECT * FROM workhorse_cancel_v1(%s, %s, %s)", [job_id, reason, by])
    return cast("tuple[str, str | None]", cursor.fetchone())


def set_queue_paused(cursor: Cursor, queue: str, paused: bool) -> tuple[str, bool]:
    """``(status, paused)`` from ``workhorse_set_queue_paused_v1``."""
    cursor.execute("SELECT * FROM workhorse_set_queue_paused_v1(%s, %s)", [queue, paused])
    return cast("tuple[str, bool]", cursor.fetchone())


def prune_step(
    cursor: Cursor,
    history_before: datetime,
    jobs_before: datetime,
    limit: int,
    dry_run: bool,
) -> list[tuple[str, str | None, int | None]]:
    """One bounded retention step: ``(action, target, rows)`` rows."""
    cursor.execute(
        "SELECT * FROM workhorse_prune_v1(%s, %s, %s, %s)",
        [history_before, jobs_before, limit, dry_run],
    )
    return [tuple(row) for row in cursor.fetchall()]


def database_now(cursor: Cursor) -> datetime:
    """The database clock, which retention windows are measured on."""
    cursor.execute("SELECT now()")
    return cast("datetime", cursor.fetchone()[0])


# -- filter-wide actions (docs/admin.md, "Retry all and cancel all") -----------


def bulk_request(
    cursor: Cursor,
    *,
    action: str,
    states: Sequence[str],
    queue: str | None,
    name: str | None,
    state: str | None,
    created_after: datetime | None,
    created_before: datetime | None,
    reason: str | None,
    by: str | None,
    permission: str | None,
    batch_size: int,
    finished_before: datetime | None,
) -> tuple[int, bool]:
    """``(action_id, inserted)`` from ``workhorse_bulk_request_v1``: inserted
    False when an action with the same filter was queued or running."""
    cursor.execute(
        "SELECT * FROM workhorse_bulk_request_v1(%s, %s::text[], %s, %s, %s, %s, %s, %s, %s,"
        " %s, %s, %s)",
        [
            action,
            _names(states),
            queue,
            name,
            state,
            created_after,
            created_before,
            reason,
            by,
            permission,
            batch_size,
            finished_before,
        ],
    )
    return cast("tuple[int, bool]", tuple(cursor.fetchone()))


def bulk_step(cursor: Cursor, action_id: int, job_id: int | None) -> dict[str, Any] | None:
    """The action's row after one ``workhorse_bulk_step_v1`` (None: no such action)."""
    cursor.execute("SELECT * FROM workhorse_bulk_step_v1(%s, %s)", [action_id, job_id])
    rows = _dict_rows(cursor)
    return rows[0] if rows else None


def bulk_cancel(cursor: Cursor, action_id: int, by: str | None) -> tuple[str, str | None]:
    """``(status, state)`` from ``workhorse_bulk_cancel_v1``."""
    cursor.execute("SELECT * FROM workhorse_bulk_cancel_v1(%s, %s)", [action_id, by])
    return cast("tuple[str, str | None]", tuple(cursor.fetchone()))


def bulk_actions(
    cursor: Cursor,
    *,
    action_id: int | None = None,
    live_only: bool = False,
    finished_after: datetime | None = None,
    limit: int = 50,
) -> list[dict[str, Any]]:
    """Action rows, newest first: one by id, the live ones, or those not yet
    past their retention window (ended at or after ``finished_after``). The
    table holds a row per action asked for in the window: a few rows."""
    cursor.execute(
        "SELECT *, clock_timestamp() AS read_at FROM workhorse_bulk_action"
        " WHERE (%s::bigint IS NULL OR id = %s::bigint)"
        " AND (NOT %s OR status IN ('queued', 'running'))"
        " AND (%s::timestamptz IS NULL OR finished_at IS NULL OR finished_at >= %s::timestamptz)"
        " ORDER BY id DESC LIMIT %s",
        [action_id, action_id, live_only, finished_after, finished_after, limit],
    )
    return _dict_rows(cursor)
