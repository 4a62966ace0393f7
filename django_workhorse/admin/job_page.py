"""The job page: a job's snapshot, its timeline of events and attempts, its
checkpoints, and the actions one job allows (retry, promote, cancel).
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from ..core import configured_jobs, registry
from ..exceptions import InvalidQueryError
from ..operations import admin_api
from ..operations.unserved import WAITING_STATES, served_queues, unserved_note
from .base import (
    JOB_ACTION_LABELS,
    JOB_ACTIONS,
    TIMELINE_PAGE,
    OperatorAdmin,
    as_text,
    details_of,
    format_seconds,
    format_when,
    in_store_query,
    job_id_of,
    may_see_payload,
    report_result,
    timeline_without_payload,
    username_of,
    without_payload,
)


def _event_label(entry: Any) -> str:
    """What a timeline event says. A ``promoted`` event is written by an
    operator's promote (its data says ``by``) or by the claim that moves a
    job whose time came (a delay, a retry's backoff, a sleep) from scheduled
    to ready: the admin tells them apart."""
    if entry.source == "attempt" or entry.kind != "promoted":
        return str(entry.kind)
    data = entry.data if isinstance(entry.data, dict) else {}
    if data.get("by") == "operator":
        return "promoted by an operator"
    return "retry due" if entry.attempt else "due"


def earlier_attempts(items: list[admin_api.TimelineEntry]) -> list[dict[str, Any]]:
    """The failed attempts of a timeline page, oldest first, each with its
    attempt number as recorded. An operator retry gives a fresh attempt
    budget, so the numbers start from 1 again after one: the first failed
    attempt after a retry carries ``after_retry`` and the page marks the
    place. A retry is read from the attempts themselves (events of one
    transaction may share their time): a number lower than the last one, or
    the same after an attempt that used it up (not a stall or a sleep,
    which keep their number)."""
    found: list[dict[str, Any]] = []
    last: admin_api.TimelineEntry | None = None
    retried = False
    for e in items:
        if e.source != "attempt" or e.attempt is None:
            continue
        if last is not None and last.attempt is not None:
            # A stall or a sleep keeps its number; anything else used it up.
            kept = last.kind in ("stalled", "slept")
            again = e.attempt < last.attempt or (e.attempt == last.attempt and not kept)
            retried = retried or again
        last = e
        if e.error:
            found.append(
                {"attempt": e.attempt, "kind": e.kind, "error": e.error, "after_retry": retried}
            )
            retried = False
    return found


class JobPage(OperatorAdmin):
    """The job page (``change_view``) and its actions."""

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        job_id = job_id_of(object_id)
        store = self.store(request)
        jobs_list = reverse("admin:django_workhorse_job_changelist")
        in_store = self.store_context(store, jobs_list)
        service = self.service(store)
        job = service.get_job(job_id)
        if job is None:
            raise Http404(f"there is no job #{job_id} in store {store!r}")
        cursor = request.GET.get("timeline") or None
        try:
            timeline = service.get_job_timeline(job_id, cursor=cursor, limit=TIMELINE_PAGE)
        except InvalidQueryError as exc:
            messages.error(request, str(exc))
            timeline = service.get_job_timeline(job_id, limit=TIMELINE_PAGE)
        timeline_items = timeline.items
        if not may_see_payload(request):
            job = without_payload(job)
            timeline_items = [timeline_without_payload(e) for e in timeline_items]
        # What an event says comes from the stored entry: who promoted a job
        # is not payload, and a user without the payload permission sees it.
        labels = [_event_label(e) for e in timeline.items]
        # Times are formatted here: the date filter costs ~0.2 ms a call, and a
        # page of 100 entries has 200 of them.
        entries = [
            {
                "entry": e,
                "duration": format_seconds(e.duration),
                "at": format_when(e.at, "%Y-%m-%d %H:%M:%S.%f"),
                "started": format_when(e.started_at, "%H:%M:%S.%f"),
                "error_text": as_text(e.error),
                "data_text": as_text(e.data),
                "details": details_of(e.data),
                "label": label,
            }
            for e, label in zip(timeline_items, labels, strict=True)
        ]
        earlier_errors = (
            earlier_attempts(timeline.items) if job.state == "succeeded" and job.error else []
        )
        # A job no live worker would claim says so here, where its operator looks.
        unserved = (
            unserved_note(job.queue, served_queues(service.live_workers()))
            if job.state in WAITING_STATES
            else None
        )
        actions = [
            name
            for name, states in JOB_ACTIONS.items()
            if job.state in states.split()
            and (name != "retry_ignoring_dependencies" or job.prerequisites)
        ]
        definition = dict.get(registry.all_jobs(), job.name)
        sources = definition.option_sources() if definition is not None else None
        context = self.context(
            request,
            title=f"Job #{job.id}: {job.name}",
            configured_options=(
                f"{configured_jobs.described(sources[1])} (from {sources[0]})" if sources else None
            ),
            crumbs=[("Jobs", jobs_list + in_store["store_suffix"]), (f"#{job.id}", None)],
            job=job,
            entries=entries,
            earlier_errors=earlier_errors,
            operator_retries=sum(
                1 for e in timeline.items if e.source == "event" and e.kind == "retried"
            ),
            unserved=unserved,
            timeline_next=(
                "?" + urlencode({"timeline": timeline.next_cursor, **in_store_query(in_store)})
                if timeline.next_cursor
                else None
            ),
            timeline_first="?" + in_store["store_param"] if cursor else None,
            job_actions=actions,
            job_buttons=[(name, JOB_ACTION_LABELS[name]) for name in actions],
            object_id=job.id,
            payload_json=json.dumps(job.payload, indent=2, ensure_ascii=False),
            checkpoints=[
                {
                    "name": c.name,
                    "kind": c.kind,
                    "result_json": json.dumps(c.result, indent=2, ensure_ascii=False),
                    "written_at": format_when(c.written_at, "%Y-%m-%d %H:%M:%S.%f"),
                    "attempt": c.attempt,
                }
                for c in job.checkpoints
            ],
            result_json=json.dumps(job.result, indent=2, ensure_ascii=False),
            error_text=as_text(job.error),
            times={
                "created": format_when(job.created_at, "%Y-%m-%d %H:%M:%S.%f"),
                "run_at": format_when(job.run_at, "%Y-%m-%d %H:%M:%S.%f"),
                "sleeping_until": format_when(job.sleeping_until, "%Y-%m-%d %H:%M:%S.%f"),
                "lease_expires_at": format_when(job.lease_expires_at, "%H:%M:%S"),
                "finished": format_when(job.finished_at, "%Y-%m-%d %H:%M:%S.%f"),
            },
            **in_store,
        )
        return TemplateResponse(request, "admin/django_workhorse/job_page.html", context)

    def action_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return require_POST(self._act)(request, object_id)

    def cancel_confirm_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """ "Cancel job #N?" with an optional reason; the form posts the cancel."""
        if not self.has_change_permission(request):
            raise PermissionDenied
        job_id = job_id_of(object_id)
        store = self.store(request)
        jobs_list = reverse("admin:django_workhorse_job_changelist")
        in_store = self.store_context(store, jobs_list)
        job = self.service(store).get_job(job_id)
        if job is None:
            raise Http404(f"there is no job #{job_id} in store {store!r}")
        page = reverse("admin:django_workhorse_job_page", args=[job_id]) + in_store["store_suffix"]
        context = self.context(
            request,
            title=f"Cancel job #{job.id}?",
            crumbs=[
                ("Jobs", jobs_list + in_store["store_suffix"]),
                (f"#{job.id}", page),
                ("Cancel", None),
            ],
            job=job,
            job_url=page,
            **in_store,
        )
        return TemplateResponse(request, "admin/django_workhorse/job_cancel.html", context)

    def _act(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if not self.has_change_permission(request):
            raise PermissionDenied
        job_id = job_id_of(object_id)
        action = request.POST.get("action")
        store = self.store(request)
        suffix = self.store_context(store, "")["store_suffix"]
        service = self.service(store)
        if action == "retry":
            result = service.retry(job_id)
        elif action == "retry_ignoring_dependencies":
            result = service.retry(job_id, ignore_dependencies=True)
        elif action == "promote":
            result = service.promote(job_id)
        elif action == "cancel":
            reason = request.POST.get("reason", "").strip() or None
            try:
                result = service.cancel(job_id, reason, by=username_of(request))
            except InvalidQueryError as exc:
                messages.error(request, f"{exc}: the job was not canceled")
                return HttpResponseRedirect(
                    reverse("admin:django_workhorse_job_cancel", args=[job_id]) + suffix
                )
        else:
            messages.error(
                request,
                f"unknown action {action!r:.40}: use retry, retry_ignoring_dependencies, "
                "promote or cancel",
            )
            if service.get_job(job_id) is None:
                # The job page would be a 404 that shows neither message.
                messages.error(request, f"there is no job #{job_id}")
                return HttpResponseRedirect(
                    reverse("admin:django_workhorse_job_changelist") + suffix
                )
            return HttpResponseRedirect(
                reverse("admin:django_workhorse_job_page", args=[job_id]) + suffix
            )
        report_result(request, result)
        if result.status == "unknown":
            # No job page to go back to (it would be a 404 that shows no
            # message): the job list shows why nothing was done.
            return HttpResponseRedirect(reverse("admin:django_workhorse_job_changelist") + suffix)
        return HttpResponseRedirect(
            reverse("admin:django_workhorse_job_page", args=[job_id]) + suffix
        )
