"""The queue dashboard and the workers page: each queue's counts, limits,
throughput chart and pause state, and the live workers.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, reverse
from django.views.decorators.http import require_POST

from ..core.conf import get_settings
from ..exceptions import InvalidQueryError, InvalidQueueLimitError, UnknownQueueError
from ..models import Queue
from ..operations.admin_api import STATES, Admin, QueueStats
from ..operations.unserved import WAITING_STATES, unserved_note
from .base import (
    OperatorAdmin,
    chart_of,
    format_seconds,
    format_when,
    format_when_zoned,
    refresh_links,
    refresh_of,
    report_result,
)

QUEUE_PAGE_COUNT_LIMIT = 1000
"""The queues page counts each live state of a queue up to this many jobs and
shows "1,000+" beyond, so that it reads a bounded number of index entries
however deep the queues are."""


def _limits(stats: QueueStats) -> str:
    """The queue's global limits as one short phrase, or '' when it has none."""
    parts = []
    if stats.concurrency_limit is not None:
        parts.append(f"{stats.concurrency_limit} at once")
    if stats.rate_limit is not None:
        parts.append(f"{stats.rate_limit} per {format_seconds(stats.rate_period)}")
    return ", ".join(parts)


@admin.register(Queue)
class QueueAdmin(OperatorAdmin):
    """The queue dashboard, with pause and resume."""

    def get_urls(self) -> list[URLPattern]:
        return [
            self.page("", self.changelist_view, "changelist"),
            self.page("act/", self.action_view, "act"),
            self.page("workers/", self.workers_view, "workers"),
        ]

    def workers_view(self, request: HttpRequest) -> HttpResponse:
        """The live workers, from their heartbeats (``Admin.live_workers``)."""
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        store = self.store(request)
        workers = self.service(store).live_workers()
        in_store = self.store_context(store, reverse("admin:django_workhorse_queue_workers"))
        context = self.context(
            request,
            title="Workers",
            crumbs=[
                (
                    "Queues",
                    reverse("admin:django_workhorse_queue_changelist") + in_store["store_suffix"],
                ),
                ("Workers", None),
            ],
            rows=[
                {
                    "worker": w,
                    "seen": format_seconds(w.seen_seconds_ago),
                    "since": format_when(w.first_seen_at, "%Y-%m-%d %H:%M:%S"),
                }
                for w in workers
            ],
            **in_store,
        )
        return TemplateResponse(request, "admin/django_workhorse/workers.html", context)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        rows: list[dict[str, Any]] = []
        store = self.store(request)
        service = self.service(store)
        for stats in service.queue_stats(count_limit=QUEUE_PAGE_COUNT_LIMIT):
            rows.append(
                {
                    "stats": stats,
                    "counts": [
                        f"{stats.counts[s]:,}+" if s in stats.capped else f"{stats.counts[s]:,}"
                        for s in STATES
                    ],
                    "limits": _limits(stats),
                    "period": None if stats.rate_period is None else round(stats.rate_period),
                    "oldest": format_seconds(stats.oldest_ready_age),
                    "chart": chart_of(stats.finished_per_bucket),
                }
            )
        configured = get_settings().queues  # validated, as every Admin call reads them
        # A queue reads "no worker" when no live worker (one whose heartbeat
        # is not overdue) says it serves it: what the heartbeats describe,
        # which a pooler in between does not hide.
        served = {q for w in service.live_workers() if not w.silent for q in w.queues}
        for row in rows:
            row["concurrency"] = (configured.get(row["stats"].name) or {}).get("concurrency")
            row["served"] = row["stats"].name in served
        unserved = [
            note
            for row in rows
            if not row["served"]
            and any(row["stats"].counts[s] for s in WAITING_STATES)
            and (note := unserved_note(row["stats"].name, served))
        ]
        # Times are formatted here: the date filter raises OverflowError for
        # a time the local calendar cannot hold, which a schedule may be set to.
        schedules = service.list_schedules()
        schedule_entries = [
            {
                "row": row,
                "next_run": format_when_zoned(row.next_run_at),
                "last_slot": format_when_zoned(row.last_slot_at),
            }
            for row in schedules
        ]
        in_store = self.store_context(store, reverse("admin:django_workhorse_queue_changelist"))
        context = self.context(
            request,
            title="Queues",
            rows=rows,
            states=STATES,
            schedules=schedules,
            schedule_entries=schedule_entries,
            unserved=unserved,
            refresh=refresh_of(request),
            refresh_links=refresh_links(request),
            **in_store,
        )
        return TemplateResponse(request, "admin/django_workhorse/queues.html", context)

    def action_view(self, request: HttpRequest) -> HttpResponse:
        return require_POST(self._act)(request)

    def _set_limits(self, request: HttpRequest, service: Admin, name: str, *, clear: bool) -> None:
        """Set (or clear) a queue's global limits from the queues page's form:
        blank fields are no limit, as ``Admin.set_queue_limits`` takes None."""
        values: dict[str, int | None] = {"concurrency": None, "rate": None, "period": None}
        if not clear:
            for key in values:
                raw = request.POST.get(key, "").strip()
                if not raw:
                    continue
                if not raw.isascii() or not raw.isdigit() or len(raw) > 9:
                    messages.error(
                        request,
                        f"queue {name[:60]!r}: {key} must be a whole number, or blank for no "
                        f"limit; got {raw[:40]!r}: nothing was changed",
                    )
                    return
                values[key] = int(raw)
            if (values["rate"] is None) != (values["period"] is None):
                messages.error(
                    request,
                    f"queue {name[:60]!r}: a rate limit needs both the number of jobs and the "
                    "period in seconds (or neither): nothing was changed",
                )
                return
        limits = service.set_queue_limits(
            name,
            global_concurrency=values["concurrency"],
            rate=values["rate"],
            period=values["period"],
        )
        described = ", ".join(
            part
            for part in (
                f"{limits.concurrency} at once" if limits.concurrency is not None else "",
                f"{limits.rate} per {format_seconds(limits.period)}"
                if limits.rate is not None
                else "",
            )
            if part
        )
        messages.success(
            request,
            f"Queue {name!r}: "
            + (f"limits set to {described}" if described else "no global limits")
            + ("" if limits.status == "changed" else " (unchanged)"),
        )

    def _act(self, request: HttpRequest) -> HttpResponse:
        if not self.has_change_permission(request):
            raise PermissionDenied
        action = request.POST.get("action")
        name = request.POST.get("queue", "")
        store = self.store(request)
        service = self.service(store)
        try:
            if action == "pause":
                report_result(request, service.pause_queue(name))
            elif action == "resume":
                report_result(request, service.resume_queue(name))
            elif action in ("set_limits", "clear_limits"):
                self._set_limits(request, service, name, clear=action == "clear_limits")
            else:
                messages.error(
                    request,
                    f"unknown action {action!r:.40}: use pause, resume, set_limits or clear_limits",
                )
        except (InvalidQueryError, UnknownQueueError, InvalidQueueLimitError) as exc:
            messages.error(request, str(exc))
        return HttpResponseRedirect(
            reverse("admin:django_workhorse_queue_changelist")
            + self.store_context(store, "")["store_suffix"]
        )
