"""``manage.py workhorse_status [--json] [--watch SECONDS]``: the queue table,
the workers and the repeatable schedules, for terminals and scripts.

Without ``--database`` it shows every store (``stores.store_aliases()``): one
store as before, several each under a heading (in JSON, an object of
snapshots by alias under ``"stores"``)."""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from ...core.stores import store_aliases
from ...db.preflight import explained
from ...operations.admin_api import STATES, Admin
from ...operations.unserved import WAITING_STATES, served_queues, unserved_note
from ._operator import database_alias, positive_int


def positive_seconds(text: str) -> float:
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or not 0.1 <= value <= 86400:
        raise argparse.ArgumentTypeError(f"must be from 0.1 to 86400 seconds, got {text!r}")
    return value


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def snapshot(admin: Admin) -> dict[str, Any]:
    """Queues, workers and schedules as plain JSON-ready data."""
    workers = admin.workers()
    served = served_queues(admin.live_workers())
    return {
        "queues": [
            {
                "queue": q.name,
                "paused": q.paused,
                # No live worker serves it: its waiting jobs wait for good (operations/unserved.py).
                "served": q.name in served,
                "unserved": (
                    unserved_note(q.name, served)
                    if any(q.counts[s] for s in WAITING_STATES)
                    else None
                ),
                **q.counts,
                "oldest_ready_seconds": q.oldest_ready_age,
                "finished_last_hour": q.finished_in_window,
                "concurrency_limit": q.concurrency_limit,
                "rate_limit": q.rate_limit,
                "rate_period_seconds": q.rate_period,
            }
            for q in admin.queue_stats()
        ],
        "workers": {
            "connected": workers["connected"],
            "holding_jobs": [
                {
                    "worker_id": w["worker_id"],
                    "jobs": w["jobs"],
                    "lease_expires_at": w["lease_expires_at"].isoformat(),
                }
                for w in workers["holding_jobs"]
            ],
            # From the heartbeats (Admin.live_workers): who runs, where, how busy.
            "seen": [
                {
                    "worker_id": w.worker_id,
                    "host": w.host,
                    "pid": w.pid,
                    "queues": w.queues,
                    "slots": w.slots,
                    "busy": w.busy,
                    "version": w.version,
                    "seen_seconds_ago": w.seen_seconds_ago,
                    "silent": w.silent,
                    "success_route": w.success_route,
                    "unreadable": w.unreadable,
                }
                for w in admin.live_workers()
            ],
            "connections": workers["connections"],
        },
        "schedules": [
            {
                "name": row.name,
                "job": row.job_name,
                "queue": row.queue,
                "cron": row.cron,
                "timezone": row.timezone,
                "catch_up": row.catch_up,
                "paused": row.paused,
                "next_run_at": _iso(row.next_run_at),
                "last_slot_at": _iso(row.last_slot_at),
                "last_job_id": row.last_job_id,
                "unreadable": row.unreadable,
            }
            for row in admin.list_schedules()
        ],
    }


def next_run(schedule: dict[str, Any]) -> str:
    """What the text table says about a schedule's next run."""
    if schedule["paused"]:
        return "paused"
    if schedule["unreadable"]:
        return "unreadable (below)"
    return schedule["next_run_at"] or "at the next sweep"


def limits(queue: dict[str, Any]) -> str:
    """A queue's global limits in a few words ("-" when it has none)."""
    parts = []
    if queue["concurrency_limit"] is not None:
        parts.append(f"{queue['concurrency_limit']} at once")
    if queue["rate_limit"] is not None:
        parts.append(f"{queue['rate_limit']}/{queue['rate_period_seconds']:g}s")
    return ", ".join(parts) or "-"


def table(data: dict[str, Any]) -> str:
    """The snapshot as an aligned text table."""
    head = ["queue", "paused", *STATES, "oldest ready", "done/1h", "limits"]
    rows = [
        [
            q["queue"],
            "yes" if q["paused"] else "no",
            *(str(q[s]) for s in STATES),
            "-" if q["oldest_ready_seconds"] is None else f"{q['oldest_ready_seconds']:.1f}s",
            str(q["finished_last_hour"]),
            limits(q),
        ]
        for q in data["queues"]
    ]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in [head, *rows]
    ]
    if not rows:
        lines.append("(no queue has live jobs or recent history)")
    lines.extend(q["unserved"] for q in data["queues"] if q.get("unserved"))
    workers = data["workers"]
    lines.append("")
    lines.append(f"workers connected: {workers['connected']}")
    for w in workers["holding_jobs"]:
        lines.append(f"  {w['worker_id']}: {w['jobs']} job(s) running")
    for w in workers["seen"]:
        queues = ", ".join(f"{q}({n})" for q, n in w["queues"].items())
        busy, slots = ("?" if n is None else n for n in (w["busy"], w["slots"]))
        seen = "?" if w["seen_seconds_ago"] is None else f"{w['seen_seconds_ago']:.0f}"
        lines.append(
            f"  {w['worker_id']} on {w['host']} pid {w['pid']}: {busy}/{slots} slots"
            f" busy, {queues}, successes {w['success_route'] or 'unsaid'},"
            f" seen {seen}s ago" + (" (silent)" if w["silent"] else "")
        )
        if w["unreadable"]:
            lines.append(f"  worker {w['worker_id']} cannot be read: {w['unreadable']}")
    if workers["connections"]:
        lines.append("worker connections (claims + leases, and the LISTEN connection):")
        for worker, held in sorted(workers["connections"].items()):
            roles = ", ".join(
                f"{role} {held.get(role, 0)}" for role in ("claims", "leases", "listen")
            )
            lines.append(f"  {worker}: {sum(held.values())} ({roles})")
    lines.append("")
    lines.extend(schedule_table(data["schedules"]))
    return "\n".join(lines)


def stores_table(by_store: dict[str, dict[str, Any]]) -> str:
    """Each store's table under a heading naming its alias."""
    return "\n\n".join(f"== store {alias}\n{table(data)}" for alias, data in by_store.items())


def schedule_table(schedules: list[dict[str, Any]]) -> list[str]:
    """The schedules section of the text output."""
    if not schedules:
        return ["schedules: none"]
    head = ["schedule", "job", "cron", "timezone", "next run", "last slot"]
    rows = [
        [
            s["name"],
            s["job"],
            s["cron"],
            s["timezone"],
            next_run(s),
            s["last_slot_at"] or "-",
        ]
        for s in schedules
    ]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in [head, *rows]
    ] + [
        f"schedule {s['name']} cannot be read: {s['unreadable']}"
        for s in schedules
        if s["unreadable"]
    ]


class Command(BaseCommand):
    help = (
        "Show every queue: counts by state (terminal ones over the last hour), oldest ready "
        "age, paused flag and limits; the workers seen now; and every repeatable schedule "
        "with its next run."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print JSON for machines")
        parser.add_argument(
            "--watch",
            type=positive_seconds,
            default=None,
            metavar="SECONDS",
            help="print again every SECONDS until interrupted",
        )
        parser.add_argument(
            "--count",
            type=positive_int,
            default=None,
            help="with --watch: stop after this many refreshes",
        )
        parser.add_argument(
            "--database",
            default=None,
            help="show this database alias only (default: every store, see WORKHORSE['STORES'])",
        )

    def handle(
        self,
        *args: Any,
        json: bool,
        watch: float | None,
        count: int | None,
        database: str | None,
        **options: Any,
    ) -> None:
        as_json = json
        if count is not None and watch is None:
            raise CommandError(
                f"--count {count} counts the refreshes of --watch; add --watch SECONDS"
            )
        admins = [Admin(using=database_alias(database))] + (
            [Admin(using=alias) for alias in store_aliases()[1:]] if database is None else []
        )
        shown = 0
        admin = admins[0]  # the one read when a database error comes
        try:
            while True:
                if len(admins) == 1:
                    data = snapshot(admin)
                    text = _dumps(data) if as_json else table(data)
                else:
                    by_store = {}
                    for admin in admins:
                        by_store[admin.using] = snapshot(admin)
                    text = _dumps({"stores": by_store}) if as_json else stores_table(by_store)
                if not as_json and watch is not None and shown:
                    self.stdout.write("")
                self.stdout.write(text)
                shown += 1
                if watch is None or (count is not None and shown >= count):
                    return
                time.sleep(watch)
        except DatabaseError as exc:
            better = explained(exc, admin.using)
            if better is not None:
                raise CommandError(str(better)) from None
            raise CommandError(f"cannot read the queues: {exc}") from exc
        except KeyboardInterrupt:
            return


def _dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, sort_keys=True)
