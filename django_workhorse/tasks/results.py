"""A workhorse job read back as Django's ``TaskResult``.

How our states map onto ``TaskResultStatus`` (docs/django-tasks.md has the
same table): blocked, scheduled and ready are READY (a retry waiting for its
backoff is "ready to be executed again"), active is RUNNING, succeeded is
SUCCESSFUL, failed and canceled are FAILED (Django has no cancelled status).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..states import AttemptOutcome, JobState
from .compat import Task, TaskError, TaskResult, TaskResultStatus

if TYPE_CHECKING:
    from ..db.snapshots import JobSnapshot
    from ..db.store import AttemptRow

STATUS_OF_STATE = {
    JobState.BLOCKED: TaskResultStatus.READY,
    JobState.SCHEDULED: TaskResultStatus.READY,
    JobState.READY: TaskResultStatus.READY,
    JobState.ACTIVE: TaskResultStatus.RUNNING,
    JobState.SUCCEEDED: TaskResultStatus.SUCCESSFUL,
    JobState.FAILED: TaskResultStatus.FAILED,
    JobState.CANCELED: TaskResultStatus.FAILED,
}


GIVEN_BACK = (AttemptOutcome.STALLED, AttemptOutcome.SLEPT)
"""The runs that end without using up their attempt: the next run redoes it."""

FAILING_OUTCOMES = (AttemptOutcome.FAILED, AttemptOutcome.TIMED_OUT, AttemptOutcome.CANCELED)
"""The attempts that end in an error, as ``task_finished`` reports them."""


def task_error(error: dict[str, Any]) -> TaskError:
    """A workhorse error envelope as Django's ``TaskError``; an envelope
    without a traceback (a job canceled while it waited, failed after its
    runs stalled) gets its type and message as one, so the reason shows."""
    kind = str(error.get("type", ""))
    trace = error.get("traceback")
    if not trace:
        trace = f"{kind}: {error.get('message', '')}\n"
    return TaskError(exception_class_path=kind, traceback=str(trace))


def _key(error: dict[str, Any]) -> tuple[Any, ...]:
    """What an attempt's error and the job's error share when the attempt
    ended the job (the job's envelope adds ``state_before`` and the like)."""
    return (error.get("type"), error.get("message"), error.get("traceback"))


def build_result(
    task: Task, backend: str, snapshot: JobSnapshot, attempts: list[AttemptRow]
) -> TaskResult:
    """The ``TaskResult`` of one job from its snapshot and its closed runs.

    ``worker_ids`` holds one worker per attempt (the one that finished it, or
    runs it now), so ``attempts`` is the number of attempts made; a run lost
    to a stall, or ended by a durable sleep, and redone under the same
    attempt number counts once. Attempts made before an operator's retry
    count too (workhorse's own attempt number starts again at 1). The job's
    current attempt is the floor: an attempt whose history row retention
    dropped still counts, with ``""`` for its worker.
    ``errors`` holds one ``TaskError`` per attempt that failed, timed out or
    was canceled, then the job's own error when it ended for another reason.
    ``started_at`` is when the first attempt started, ``last_attempted_at``
    when the latest one did, ``finished_at`` when the job became terminal.
    """
    runs: list[tuple[int, str | None, str]] = [
        (row.attempt, row.outcome, row.worker_id) for row in attempts
    ]
    starts = [row.started_at for row in attempts]
    if snapshot.state == JobState.ACTIVE and snapshot.worker_id:
        runs.append((snapshot.current_attempt, None, snapshot.worker_id))
        if snapshot.started_at is not None:
            starts.append(snapshot.started_at)
    # An operator's retry starts the job over at attempt 1 (a fresh attempt
    # budget); the attempts before it were still made, so each life of the
    # job keeps its own workers.
    lives: list[dict[int, str]] = [{}]
    previous: tuple[int, str | None] | None = None
    for attempt, outcome, worker_id in runs:
        if previous is not None and (
            attempt < previous[0] or (attempt == previous[0] and previous[1] not in GIVEN_BACK)
        ):
            lives.append({})
        lives[-1][attempt] = worker_id
        previous = (attempt, outcome)
    for n in range(1, snapshot.current_attempt + 1):
        # Retention may have dropped the history row of an attempt of a live
        # job; the attempt still counts, its worker is no longer known.
        lives[-1].setdefault(n, "")
    failures = [
        row.error for row in attempts if row.error is not None and row.outcome in FAILING_OUTCOMES
    ]
    ended = snapshot.state in (JobState.FAILED, JobState.CANCELED)
    if (
        ended
        and snapshot.error is not None
        and (not failures or _key(failures[-1]) != _key(snapshot.error))
    ):
        # It ended without an attempt failing with this error: canceled while
        # it waited (by an operator, or by prerequisites that can no longer
        # satisfy its policy), or failed after its runs stalled. The job's
        # error is what says why it is FAILED.
        failures.append(snapshot.error)
    errors = [task_error(error) for error in failures]
    payload = snapshot.payload
    result = TaskResult(
        task=task,
        id=str(snapshot.id),
        status=STATUS_OF_STATE[JobState(snapshot.state)],
        enqueued_at=snapshot.created_at,
        started_at=min(starts) if starts else None,
        finished_at=snapshot.finished_at,
        last_attempted_at=max(starts) if starts else None,
        args=list(payload.get("args", [])),
        kwargs=dict(payload.get("kwargs", {})),
        backend=backend,
        errors=errors,
        worker_ids=[life[n] for life in lives for n in sorted(life)],
    )
    if snapshot.state == JobState.SUCCEEDED:
        object.__setattr__(result, "_return_value", snapshot.result)
    return result
