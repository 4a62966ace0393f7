"""Filter-wide actions from the job list: the confirmation page of "retry
all" / "cancel all", the start of the action (a job of the operator queue),
and the pages of actions under way (``actions.py``).
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from ..exceptions import InvalidQueryError
from ..operations import admin_api
from ..operations.admin_api import STATES
from . import actions
from .base import (
    JOB_ACTIONS,
    MATCHING_COUNT_CAP,
    MATCHING_UNSUPPORTED,
    PAGE_SIZE,
    OperatorAdmin,
    in_store_query,
    job_id_of,
    report_result,
    username_of,
)


class MatchingPages(OperatorAdmin):
    """The filter-wide actions' pages."""

    def matching_view(self, request: HttpRequest) -> HttpResponse:
        """Retry or cancel every job the list's filter matches: GET shows how
        many (counted up to MATCHING_COUNT_CAP) and asks; POST asks for the
        action (``Admin.start_bulk``), which a worker runs as a job, and goes
        to the action's page (admin/actions.py)."""
        if not self.has_change_permission(request):
            raise PermissionDenied
        store = self.store(request)
        in_store = self.store_context(store, reverse("admin:django_workhorse_job_changelist"))
        service = self.service(store)
        source = request.POST if request.method == "POST" else request.GET
        action = source.get("action")
        filters = {key: source.get(key) or None for key in ("queue", "name", "state")}
        back_query = {k: v for k, v in filters.items() if v is not None}
        back_query.update(in_store_query(in_store))
        back = reverse("admin:django_workhorse_job_changelist") + (
            "?" + urlencode(back_query) if back_query else ""
        )
        if action not in ("retry", "cancel"):
            messages.error(request, f"unknown action {action!r:.40}: use retry or cancel")
            return HttpResponseRedirect(back)
        narrower = [key for key in MATCHING_UNSUPPORTED if source.get(key)]
        if narrower:
            # Acting on the queue, name and state alone would take in jobs
            # the list did not show: refuse rather than widen.
            messages.error(
                request,
                f"an action on every matching job takes the queue, name and state filters "
                f"only, not {', '.join(narrower)}: nothing was done; tick the jobs instead",
            )
            return HttpResponseRedirect(back)
        # Only the states the action applies to are walked: without a state
        # filter, the finished jobs of the queue (its whole history) would be
        # read batch by batch for nothing, and counted as if they would change.
        applies = JOB_ACTIONS[action].split()
        chosen = filters["state"]
        if chosen is not None and chosen not in STATES:
            messages.error(
                request,
                f"state must be one of {', '.join(STATES)}; got {chosen!r:.40}: nothing was done",
            )
            return HttpResponseRedirect(back)
        states = [chosen] if chosen in applies else [] if chosen else applies
        if request.method == "POST":
            return actions.start(
                self, request, service, action, filters, back, in_store["store_suffix"]
            )
        try:
            counts = [
                service.count_jobs(
                    queue=filters["queue"],
                    name=filters["name"],
                    state=state,
                    cap=MATCHING_COUNT_CAP,
                )
                for state in states
            ]
        except InvalidQueryError as exc:
            messages.error(request, str(exc))
            return HttpResponseRedirect(back)
        described = ", ".join(f"{k} {v}" for k, v in filters.items() if v) or "no filter"
        context = self.context(
            request,
            title=f"{'Retry' if action == 'retry' else 'Cancel'} every matching job?",
            crumbs=[("Jobs", back), ("Every matching job", None)],
            action=action,
            filters=filters,
            described=described,
            count=f"{sum(counts):,}"
            + ("+" if any(n >= MATCHING_COUNT_CAP for n in counts) else ""),
            nothing=sum(counts) == 0,
            applies=", ".join(applies[:-1]) + " and " + applies[-1]
            if len(applies) > 1
            else applies[0],
            back=back,
            batch=f"{admin_api.BULK_BATCH_SIZE:,}",
            **in_store,
        )
        return TemplateResponse(request, "admin/django_workhorse/job_matching.html", context)

    def bulk_actions_view(self, request: HttpRequest) -> HttpResponse:
        return actions.actions_view(self, request)

    def bulk_action_page_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return actions.action_view(self, request, object_id)

    def bulk_cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return actions.cancel_view(self, request, object_id)

    def bulk_action_view(self, request: HttpRequest) -> HttpResponse:
        return require_POST(self._bulk)(request)

    def _bulk(self, request: HttpRequest) -> HttpResponse:
        if not self.has_change_permission(request):
            raise PermissionDenied
        store = self.store(request)
        back = request.POST.get("next") or ""
        target = reverse("admin:django_workhorse_job_changelist")
        if back.startswith("?"):
            target += back
        else:
            target += self.store_context(store, "")["store_suffix"]
        action = request.POST.get("action")
        if action not in ("retry", "cancel"):
            messages.error(request, f"unknown action {action!r:.40}: use retry or cancel")
            return HttpResponseRedirect(target)
        try:
            # A job ticked twice (two forms of one page) is acted on once.
            ids = list(dict.fromkeys(job_id_of(raw) for raw in request.POST.getlist("job")))
        except Http404 as exc:
            messages.error(request, str(exc))
            return HttpResponseRedirect(target)
        if not ids:
            messages.warning(request, "select at least one job")
            return HttpResponseRedirect(target)
        if len(ids) > PAGE_SIZE:
            messages.error(
                request,
                f"{len(ids)} jobs were sent; an action takes at most {PAGE_SIZE} (one page): "
                "nothing was done, select fewer",
            )
            return HttpResponseRedirect(target)
        reason = (request.POST.get("reason") or "").strip() or None
        try:
            results = self.service(store).bulk(
                action, ids, by=username_of(request), reason=reason if action == "cancel" else None
            )
        except InvalidQueryError as exc:
            messages.error(request, f"{exc}: nothing was done")
            return HttpResponseRedirect(target)
        done = [r for r in results if r.changed]
        if done:
            verb = "retried" if action == "retry" else "canceled"
            messages.success(
                request, f"{len(done)} job(s) {verb}: " + ", ".join(f"#{r.target}" for r in done)
            )
        for result in results:
            if not result.changed:
                report_result(request, result)
        return HttpResponseRedirect(target)
