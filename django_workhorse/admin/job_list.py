"""The job list: keyset-paged, filtered by state, queue, name, payload and
error, with each state counted up to ``COUNT_CAP`` (never a COUNT(*)).
"""

from __future__ import annotations

from typing import Any, cast

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from ..core.limits import QUEUE_NAME_RE
from ..exceptions import InvalidQueryError
from ..operations import admin_api
from ..operations.admin_api import STATES, Admin
from . import actions
from .base import (
    JOB_ACTIONS,
    MATCHING_UNSUPPORTED,
    PAGE_SIZE,
    OperatorAdmin,
    format_when,
    may_see_payload,
    parse_payload_search,
    refresh_links,
    refresh_of,
)


class JobListPage(OperatorAdmin):
    """The job list (``changelist_view``)."""

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        params = request.GET
        filters = {
            key: params.get(key) or None
            for key in ("queue", "name", "state", "q", "cursor", "prefix", "payload", "error_type")
        }
        search = filters.pop("q")
        cursor = filters.pop("cursor")
        extra = {
            "name_prefix": (filters.pop("prefix") or "").strip() or None,
            "error_type": filters.pop("error_type"),
        }
        payload_text = (filters.pop("payload") or "").strip()
        see_payload = may_see_payload(request)
        page: admin_api.Page[admin_api.JobRow] = admin_api.Page([], None)
        store = self.store(request)
        in_store = self.store_context(store, reverse("admin:django_workhorse_job_changelist"))
        service = self.service(store)
        payload_live_only = False
        try:
            kwargs: dict[str, Any] = {k: v for k, v in filters.items() if v is not None}
            kwargs.update({k: v for k, v in extra.items() if v is not None})
            if payload_text:
                if not see_payload:
                    raise PermissionDenied(
                        "searching by payload needs the permission to see payloads"
                    )
                kwargs["payload"] = parse_payload_search(payload_text)
                payload_live_only = not service.payload_search_covers_every_job()
            search = (search or "").strip()  # blank: no search
            if search:
                # A number that could be a job id opens that job when it exists;
                # anything else, a larger number too, is an idempotency key.
                if (
                    search.isascii()
                    and search.isdigit()
                    and len(search) <= 19
                    and 1 <= int(search) <= admin_api.MAX_JOB_ID
                ):
                    snapshot = service.get_job(int(search))
                    if snapshot is not None:
                        return HttpResponseRedirect(
                            reverse("admin:django_workhorse_job_page", args=[snapshot.id])
                            + in_store["store_suffix"]
                        )
                kwargs["idempotency_key"] = search
            page = service.list_jobs(cursor=cursor, limit=PAGE_SIZE, **kwargs)
        except InvalidQueryError as exc:
            messages.error(request, str(exc))
        queues = service.queue_names()
        chosen = filters.get("queue")
        if chosen and chosen not in queues and QUEUE_NAME_RE.fullmatch(chosen):
            # A queue with no job yet stays chosen, so the next Filter keeps it.
            queues = sorted([*queues, chosen])
        base = request.GET.copy()
        base.pop("cursor", None)

        def link(page_cursor: str | None) -> str | None:
            if page_cursor is None:
                return None
            query = base.copy()
            query["cursor"] = page_cursor
            return cast("str | None", "?" + query.urlencode())

        state_links = []
        for state in (None, *STATES):
            query = base.copy()
            query.pop("state", None)
            if state:
                query["state"] = state
            state_links.append(
                {
                    "state": state or "all",
                    "url": "?" + query.urlencode(),
                    "selected": filters["state"] == state,
                }
            )
        counts = self.state_counts(service, filters.get("queue"), filters.get("name"))
        for state_link in state_links:
            n = counts.get(state_link["state"])
            state_link["count"] = (
                None if n is None else (f"{n:,}+" if n >= admin_api.COUNT_CAP else f"{n:,}")
            )
        matching = base.copy()
        for key in ("cursor", "refresh"):
            matching.pop(key, None)
        context = self.context(
            request,
            title="Jobs",
            page=page,
            rows=[
                {
                    "job": job,
                    "created": format_when(job.created_at, "%Y-%m-%d %H:%M:%S"),
                    "when": format_when(job.finished_at or job.run_at, "%Y-%m-%d %H:%M:%S"),
                    "error": (
                        None
                        if job.error_type is None
                        else job.error_type
                        + (f": {job.error_message}" if see_payload and job.error_message else "")
                    ),
                }
                for job in page.items
            ],
            any_error=any(job.error_type for job in page.items),
            extra=extra,
            payload_text=payload_text if see_payload else "",
            payload_live_only=payload_live_only,
            matching_query=matching.urlencode(),
            can_act_on_matching=not any(params.get(key) for key in MATCHING_UNSUPPORTED),
            # Offered only where the list's state lets the action change a job.
            matching_actions=[
                action
                for action in ("retry", "cancel")
                if not filters["state"] or filters["state"] in JOB_ACTIONS[action].split()
            ],
            refresh=refresh_of(request),
            refresh_links=refresh_links(request),
            failures_url=reverse("admin:django_workhorse_job_failures"),
            actions_url=reverse("admin:django_workhorse_job_actions"),
            running_actions=actions.banner(service),
            filters=filters,
            search=search or "",
            queues=queues,
            states=STATES,
            state_links=state_links,
            older_url=link(page.next_cursor),
            newer_url=link(page.previous_cursor),
            first_url="?" + base.urlencode() if cursor else None,
            bulk_actions=["retry", "cancel"],
            **in_store,
        )
        return TemplateResponse(request, "admin/django_workhorse/job_list.html", context)

    def state_counts(self, service: Admin, queue: str | None, name: str | None) -> dict[str, int]:
        """Jobs per state (and "all") for the list's queue and name filters,
        each counted up to ``admin_api.COUNT_CAP``; none for a filter that is
        not valid (the list says why)."""
        try:
            found = {
                state: service.count_jobs(queue=queue, name=name, state=state) for state in STATES
            }
            found["all"] = service.count_jobs(queue=queue, name=name)
        except InvalidQueryError:
            return {}
        return found
