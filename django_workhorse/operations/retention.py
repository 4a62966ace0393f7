"""Retention: retire history and finished jobs past their window.

``prune()`` repeats bounded steps of ``workhorse_prune_v1`` (each its own
transaction) until nothing past the window is left: whole day partitions of
job_event and attempt_history are dropped, stray rows of the default
partitions and finished jobs are deleted in batches. Live jobs are never
touched. One pruner runs at a time across the fleet (an advisory lock); a
second one finds it busy and stops without doing anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from ..core.conf import RetentionSettings, get_retention
from ..db import store
from ..db.store import Cursor

KEEP_FOREVER = datetime(1, 1, 2, tzinfo=UTC)
"""The cut-off used for a window of None: nothing is older."""

DRY_RUN_COUNT_LIMIT = 100_000_000
"""A dry run counts what it would delete up to this many rows."""


@dataclass
class PruneReport:
    """What a prune did, or with ``dry_run`` would do."""

    dry_run: bool
    history_before: datetime
    jobs_before: datetime
    busy: bool = False
    """Another session was pruning: nothing was done."""
    dropped_partitions: list[str] = field(default_factory=list)
    deferred_partitions: list[str] = field(default_factory=list)
    """Partitions past the window that a long reader kept locked: left for
    the next run (a waiting drop would hold up every insert of the fleet)."""
    deleted_history_rows: int = 0
    """Rows deleted from the default partitions (not counting dropped partitions)."""
    deleted_jobs: int = 0
    steps: int = 0
    complete: bool = True
    """False when ``max_steps`` ended the run with more past the window."""

    @property
    def did_anything(self) -> bool:
        return bool(
            self.dropped_partitions
            or self.deferred_partitions
            or self.deleted_history_rows
            or self.deleted_jobs
        )

    def lines(self) -> list[str]:
        """The report in words, one line per thing, for commands and logs."""
        would = "would " if self.dry_run else ""
        if self.busy:
            return ["another prune is running; nothing done"]
        out = [f"history {_window(self.history_before)}, finished jobs {_window(self.jobs_before)}"]
        out += [f"{would}drop partition {name}" for name in self.dropped_partitions]
        out += [
            f"partition {name} is in use (a long transaction reads it); left for the next run"
            for name in self.deferred_partitions
        ]
        if self.deleted_history_rows:
            out.append(f"{would}delete {self.deleted_history_rows} row(s) of default partitions")
        out.append(f"{would}delete {self.deleted_jobs} finished job(s)")
        return out


def _window(cutoff: datetime) -> str:
    """A cut-off in words: "before <time>", or "kept forever" for a window of None."""
    if cutoff == KEEP_FOREVER:
        return "kept forever"
    return f"before {cutoff:%Y-%m-%d %H:%M:%S %Z}"


def _cutoff(now: datetime, seconds: float | None) -> datetime:
    if seconds is None:
        return KEEP_FOREVER
    return now - timedelta(seconds=seconds)


def prune(
    cursor: Cursor,
    *,
    dry_run: bool = False,
    settings: RetentionSettings | None = None,
    max_steps: int | None = None,
) -> PruneReport:
    """Retire what is past the windows of ``settings`` (default: the
    ``RETENTION`` setting), measured on the database clock.

    ``cursor`` must be in autocommit mode (a Django cursor outside
    ``atomic()``, or a worker's connection): every step commits on its own.
    ``max_steps`` bounds the work of one call (a worker's periodic run).
    """
    settings = settings or get_retention()
    now = store.database_now(cursor)
    report = PruneReport(
        dry_run=dry_run,
        history_before=_cutoff(now, settings.history),
        jobs_before=_cutoff(now, settings.finished_jobs),
    )
    limit = DRY_RUN_COUNT_LIMIT if dry_run else settings.batch_size
    while max_steps is None or report.steps < max_steps:
        rows = store.prune_step(cursor, report.history_before, report.jobs_before, limit, dry_run)
        report.steps += 1
        more = False
        for action, target, count in rows:
            if action == "busy":
                report.busy = True
            elif action == "drop_partition":
                report.dropped_partitions.append(str(target))
                more = more or not dry_run  # a step with drops stops before deleting
            elif action == "drop_deferred":
                if target not in report.deferred_partitions:
                    report.deferred_partitions.append(str(target))
            elif action == "delete_default":
                report.deleted_history_rows += count or 0
                more = more or (count or 0) >= limit
            elif action == "delete_counters":
                # The dashboard's counters go with the history, unreported:
                # they are a few rows per queue and minute.
                more = more or (count or 0) >= limit
            elif action == "delete_jobs":
                report.deleted_jobs += count or 0
                more = more or (count or 0) >= limit
        if dry_run or report.busy or not more:
            break
    else:
        report.complete = False
    return report
