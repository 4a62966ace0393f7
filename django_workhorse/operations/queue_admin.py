"""``Admin``'s calls about queues, schedules and workers: statistics, limits,
pause and resume, the live workers.
"""

from __future__ import annotations

import warnings
from datetime import timedelta
from typing import Any

from django.db import connections, transaction

from ..core.conf import get_settings
from ..core.limits import (
    shown,
    text_problem,
)
from ..db import store
from ..db.snapshots import Checkpoint as Checkpoint  # (the names' old home)
from ..db.snapshots import JobDependency as JobDependency
from ..exceptions import InvalidQueryError, UnknownScheduleError
from .admin_base import AdminBase, check_queue_name, check_window
from .admin_results import (
    INT4_MAX,
    MAX_BUCKETS,
    MAX_RENEW_INTERVAL,
    STATES,
    UNSET,
    ActionResult,
    QueueStats,
    WorkerInfo,
    is_number,
    slot_count,
)


class QueueOperations(AdminBase):
    """Queues, schedules and workers (part of ``Admin``)."""

    def pause_schedule(self, name: str) -> None:
        """Stop a repeatable schedule from enqueuing until ``resume_schedule``;
        UnknownScheduleError when there is no schedule ``name``."""
        self._set_schedule_paused(name, True)

    def resume_schedule(self, name: str) -> None:
        """Let a paused schedule enqueue again, from its first slot after now
        (the slots that passed while it was paused are not caught up)."""
        self._set_schedule_paused(name, False)

    def list_schedules(self) -> list[store.ScheduleRow]:
        """Every repeatable schedule and its next run (None: not planned until
        the next sweep), by name."""
        with connections[self.using].cursor() as cursor:
            return store.list_schedules(cursor)

    def _set_schedule_paused(self, name: str, paused: bool) -> None:
        if not isinstance(name, str) or not name:
            raise InvalidQueryError(f"a schedule name is a non-empty string, got {shown(name)}")
        if problem := text_problem(name, "the schedule name"):
            raise InvalidQueryError(problem)
        with connections[self.using].cursor() as cursor:
            found = store.set_schedule_paused(cursor, name, paused)
        if not found:
            raise UnknownScheduleError(
                f"no schedule named {name!r} in database {self.using!r}; schedules come from "
                "@workhorse.job(schedule=...) and WORKHORSE['SCHEDULES'] and are written when a "
                "worker starts"
            )

    def set_queue_limits(
        self,
        name: str,
        *,
        global_concurrency: int | None = None,
        rate: int | None = None,
        period: float | timedelta | None = None,
        concurrency: Any = UNSET,
    ) -> store.QueueLimits:
        """Set the limits of queue ``name`` for every worker at once: at most
        ``global_concurrency`` active jobs across the fleet, and at most
        ``rate`` jobs started per ``period`` (seconds or a timedelta). None
        removes that limit, so a call states the whole policy. The claim
        enforces both; idle workers are woken. Returns the limits in force
        and whether they ``changed``.

        ``concurrency=`` is the old name of ``global_concurrency`` (it warns:
        ``concurrency`` everywhere else means slots per worker).

        Raises UnknownQueueError for a queue neither this code nor this
        database knows (no job registered for this database uses it,
        ``WORKHORSE['QUEUES']`` does not name it, it has no policy row and no
        job of it is stored), InvalidQueueLimitError for a bad value, and
        InvalidQueryError for a malformed name. A worker that starts
        with limits in ``WORKHORSE['QUEUES'][name]`` sets those instead.
        """

        from ..core.conf import duration_seconds, queue_limit_problems
        from ..exceptions import InvalidQueueLimitError

        if concurrency is not UNSET:
            if global_concurrency is not None:
                raise TypeError(
                    "set_queue_limits() got both global_concurrency= and concurrency= (its "
                    "old name): pass global_concurrency= alone"
                )
            warnings.warn(
                "set_queue_limits(concurrency=...) is deprecated: call it global_concurrency=, "
                "the cap on the queue's active jobs across every worker (concurrency elsewhere "
                "means slots per worker)",
                DeprecationWarning,
                stacklevel=2,
            )
            global_concurrency = concurrency
        name = check_queue_name(name)  # malformed: InvalidQueryError, as pause_queue
        problems = queue_limit_problems(global_concurrency, rate, period)
        if problems:
            raise InvalidQueueLimitError(f"queue {name!r}: {'; '.join(problems)}")
        self._require_known_queue(name)
        seconds = duration_seconds(period) if period is not None else None
        with transaction.atomic(using=self.using), connections[self.using].cursor() as cursor:
            return store.set_queue_limits(cursor, name, global_concurrency, rate, seconds)

    def _require_known_queue(self, name: str) -> None:
        """Raise UnknownQueueError unless ``name`` is a queue this code or this
        database knows: a job registered for this database uses it,
        ``WORKHORSE['QUEUES']`` names it, it has a policy row (it was paused
        or limited before), or the database holds a job of it. A queue can be
        known before any job was enqueued on it; a typo is not known at all."""
        from ..core.registry import known_queues
        from ..exceptions import UnknownQueueError
        from ..models import JobQuery, Queue

        known = known_queues(self.using, get_settings().queues)
        if name in known:
            return
        if Queue.objects.using(self.using).filter(name=name).exists():
            return
        if JobQuery.objects.using(self.using).filter(queue=name).exists():
            return
        raise UnknownQueueError(
            f"unknown queue {name!r}: no job registered for database {self.using!r} uses it, "
            f"WORKHORSE['QUEUES'] does not name it, it has no policy yet and no job of it is "
            f"stored (known: {', '.join(known) or 'none'}); check the name, or declare the "
            f"queue in WORKHORSE['QUEUES']"
        )

    def queue_stats(
        self,
        window_seconds: float | timedelta = 3600.0,
        buckets: int = 12,
        count_limit: int | None = None,
    ) -> list[QueueStats]:
        """Every queue with live jobs, jobs finished within the window, or a policy
        row: counts by state, oldest ready age, paused flag, limits, throughput
        buckets.

        Live counts are exact by default, at a cost that grows with the number
        of live jobs. With ``count_limit`` each live state is counted up to that
        many per queue and the states that reached it are in ``capped``: the
        call then reads a bounded number of index entries however deep the
        queues are (the admin's queues page uses 1,000)."""
        window = check_window("window_seconds", window_seconds)
        if (
            not isinstance(buckets, int)
            or isinstance(buckets, bool)
            or not 1 <= buckets <= MAX_BUCKETS
        ):
            raise InvalidQueryError(
                f"buckets must be a whole number from 1 to {MAX_BUCKETS}, got {shown(buckets, 40)}"
            )
        if count_limit is not None and (
            not isinstance(count_limit, int)
            or isinstance(count_limit, bool)
            or not 1 <= count_limit <= INT4_MAX
        ):
            raise InvalidQueryError(
                f"count_limit must be a whole number from 1 to {INT4_MAX}, or None to count"
                f" exactly; got {shown(count_limit, 40)}"
            )
        with connections[self.using].cursor() as db:
            rows = store.queue_stats(db, window, buckets, count_limit)
        return [
            QueueStats(
                name=r["queue"],
                paused=r["paused"],
                counts={s: r[s] for s in STATES},
                oldest_ready_at=r["oldest_ready_at"],
                oldest_ready_age=r["oldest_ready_seconds"],
                finished_per_bucket=list(r["finished_per_bucket"]),
                window_seconds=r["window_seconds"],
                capped=frozenset(r["capped"]),
                concurrency_limit=r["concurrency_limit"],
                rate_limit=r["rate_limit"],
                rate_period=r["rate_period_seconds"],
            )
            for r in rows
        ]

    def queue_names(self) -> list[str]:
        """Every queue that has a job (live or kept) or a policy row, in name order."""
        with connections[self.using].cursor() as db:
            return store.queue_names(db)

    def workers(self) -> dict[str, Any]:
        """Workers seen now: how many live ones describe themselves in their
        heartbeats (``live_workers``, the silent ones left out), who holds
        leases, and the connections each worker holds
        (``store.worker_connections``)."""
        connected = sum(1 for w in self.live_workers() if not w.silent)
        with connections[self.using].cursor() as db:
            return {
                "connected": connected,
                "holding_jobs": store.workers_holding_jobs(db),
                "connections": store.worker_connections(db),
            }

    def live_workers(self, seen_within_seconds: float = 3600.0) -> list[WorkerInfo]:
        """Workers whose heartbeat was seen within ``seen_within_seconds``
        (default an hour), most recently seen first: id, host, pid, queues and
        slots, slots busy, version, when first and last seen, whether it has
        gone silent, the jobs it holds, and the route of its successes."""
        within = check_window("seen_within_seconds", seen_within_seconds)
        with connections[self.using].cursor() as db:
            rows = store.list_workers(db, within)
            held: dict[str, int] = {}
            for holder in store.workers_holding_jobs(db):
                # A claim session may own jobs under "<worker id>+N" (worker/claims.py).
                worker = str(holder["worker_id"]).split("+", 1)[0]
                held[worker] = held.get(worker, 0) + int(holder["jobs"])
        found = []
        for r in rows:
            info = r["info"]  # decoded by the store; {} when it could not be
            interval = info.get("renew_interval")
            interval = (
                float(interval)
                if is_number(interval) and 0 < interval <= MAX_RENEW_INTERVAL
                else 15.0
            )
            queues = info.get("queues")
            pid = info.get("pid")
            problems = [r["info_unreadable"]] if r["info_unreadable"] else []
            slots, busy = (slot_count(info, key, problems) for key in ("slots", "busy"))
            if problems:
                problems[-1] += (
                    "; a running worker writes its row again at its next heartbeat (delete "
                    "the row of one that is gone)"
                )
            if r["unreadable"]:
                problems.append(r["unreadable"])
            seen = r["seen_seconds_ago"]
            found.append(
                WorkerInfo(
                    worker_id=r["worker_id"],
                    host=str(info.get("host", "")),
                    pid=pid if is_number(pid) and isinstance(pid, int) else None,
                    queues=dict(queues) if isinstance(queues, dict) else {},
                    slots=slots,
                    busy=busy,
                    version=str(info.get("version", "")),
                    first_seen_at=r["first_seen_at"],
                    last_seen_at=r["last_seen_at"],
                    seen_seconds_ago=seen,
                    silent=seen is None or seen > 3 * interval + 5,
                    jobs_held=held.get(r["worker_id"], 0),
                    success_route=str(info.get("success_route") or ""),
                    unreadable="; ".join(problems) or None,
                )
            )
        return found

    def pause_queue(self, name: str) -> ActionResult:
        """Stop workers claiming from ``name``; running jobs finish.

        Raises UnknownQueueError for a queue neither this code nor this
        database knows (the rule of ``set_queue_limits``), so that a typo is
        refused rather than answered "paused"."""
        return self._set_paused(name, True)

    def resume_queue(self, name: str) -> ActionResult:
        """Let workers claim from ``name`` again, waking idle ones at once;
        UnknownQueueError as ``pause_queue``."""
        return self._set_paused(name, False)

    def _set_paused(self, name: str, paused: bool) -> ActionResult:
        name = check_queue_name(name)
        self._require_known_queue(name)
        status, now_paused = self._act(store.set_queue_paused, name, paused)
        word = "paused" if now_paused else "running"
        message = (
            f"queue {name!r} is {word}"
            if status == "changed"
            else f"queue {name!r} was already {word}"
        )
        return ActionResult("pause" if paused else "resume", name, status, word, message)
