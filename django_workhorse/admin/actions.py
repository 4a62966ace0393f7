"""The admin pages of filter-wide actions ("retry all", "cancel all").

Confirming an action on every matching job (the job list's matching page)
asks for it with ``Admin.start_bulk`` and lands on the action's page at
once; a worker serving ``workhorse.operator`` does the work. The action's
page shows its progress (done / total, rate, time left) and refreshes itself
while it runs; the job list shows a banner per running action; **Actions**
lists the actions of the retention window. Seeing needs the view permission
on jobs; asking for an action or stopping one needs the change permission,
which is checked when the action is asked for and recorded with it.

Called by the job pages of ``JobAdmin`` (``job_matching.py``, and the
banner by ``job_list.py``) with the admin as ``model_admin``; nothing here
imports them.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import reverse

from ..core.conf import get_settings
from ..exceptions import InvalidQueryError
from ..operations.admin_api import MAX_JOB_ID, Admin
from ..operations.bulk_actions import BulkAction

CHANGE_PERMISSION = "django_workhorse.change_job"
"""What the admin checks before asking for an action, and records with it."""

REFRESH_WHILE_RUNNING = 2
"""Seconds between refreshes of a running action's page."""


def username_of(request: HttpRequest) -> str | None:
    user = getattr(request, "user", None)
    name = user.get_username() if user is not None else None
    return name or None


def _action_id(raw: str) -> int:
    if not raw.isascii() or not raw.isdigit() or len(raw) > 19 or not 1 <= int(raw) <= MAX_JOB_ID:
        raise Http404(f"{raw[:40]!r} is not an action id")
    return int(raw)


def _duration(seconds: float | None) -> str:
    """``1 h 2 min``, ``3 min 4 s``, ``5 s``; a dash when not known."""
    if seconds is None:
        return "—"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


def described(action: BulkAction) -> dict[str, Any]:
    """What the templates show of an action."""
    total = action.total
    done = action.matched
    percent = None if not total else min(100, round(100 * done / total))
    rate = action.rate
    return {
        "action": action,
        "verb": "Retry" if action.action == "retry" else "Cancel",
        "done": f"{done:,}",
        "total": "counting…" if total is None else f"{total:,}",
        "percent": percent,
        "rate": "—" if rate is None else f"{rate:,.0f} jobs/s",
        "left": _duration(action.seconds_left),
        "states": ", ".join(action.states),
    }


def action_url(model_admin: Any, action_id: int, store_suffix: str) -> str:
    return str(reverse("admin:django_workhorse_job_action", args=[action_id]) + store_suffix)


def start(
    model_admin: Any,
    request: HttpRequest,
    service: Admin,
    action: str,
    filters: dict[str, str | None],
    back: str,
    store_suffix: str,
) -> HttpResponse:
    """The POST of the matching page: ask for the action and go to its page."""
    if not model_admin.has_change_permission(request):
        raise PermissionDenied
    reason = (request.POST.get("reason") or "").strip() or None
    try:
        asked = service.start_bulk(
            action,
            queue=filters.get("queue"),
            name=filters.get("name"),
            state=filters.get("state"),
            reason=reason,
            by=username_of(request),
            permission=CHANGE_PERMISSION,
        )
    except InvalidQueryError as exc:
        messages.error(request, f"{exc}: nothing was done")
        return HttpResponseRedirect(back)
    if asked.inserted:
        messages.success(
            request,
            f"action #{asked.id} asked for: a worker {action}s the matching jobs, "
            "and this page shows how far it got",
        )
    else:
        messages.warning(
            request,
            f"the same action on the same filter is already {asked.status} (action "
            f"#{asked.id}): nothing new was asked for",
        )
    return HttpResponseRedirect(action_url(model_admin, asked.id, store_suffix))


def action_view(model_admin: Any, request: HttpRequest, object_id: str) -> HttpResponse:
    """One action: its filter, who asked, and its progress."""
    if not model_admin.has_view_or_change_permission(request):
        raise PermissionDenied
    action_id = _action_id(object_id)
    store = model_admin.store(request)
    in_store = model_admin.store_context(store, reverse("admin:django_workhorse_job_changelist"))
    found = model_admin.service(store).bulk_action(action_id)
    if found is None:
        raise Http404(
            f"there is no action #{action_id} (ended actions are kept for the "
            "retention window of finished jobs)"
        )
    operator_store = get_settings().database
    job_url = None
    if found.job_id is not None:
        job_url = reverse("admin:django_workhorse_job_page", args=[found.job_id])
        if in_store["store_param"]:
            job_url += f"?store={operator_store}"
    context = model_admin.context(
        request,
        title=f"Action #{found.id}: {found.action} every matching job",
        crumbs=[
            ("Jobs", reverse("admin:django_workhorse_job_changelist") + in_store["store_suffix"]),
            ("Actions", reverse("admin:django_workhorse_job_actions") + in_store["store_suffix"]),
            (f"#{found.id}", None),
        ],
        refresh=REFRESH_WHILE_RUNNING if found.running else None,
        job_url=job_url,
        **described(found),
        **in_store,
    )
    return TemplateResponse(request, "admin/django_workhorse/bulk_action.html", context)


def actions_view(model_admin: Any, request: HttpRequest) -> HttpResponse:
    """The actions of the retention window, newest first."""
    if not model_admin.has_view_or_change_permission(request):
        raise PermissionDenied
    store = model_admin.store(request)
    in_store = model_admin.store_context(store, reverse("admin:django_workhorse_job_actions"))
    found = model_admin.service(store).bulk_actions(limit=100)
    context = model_admin.context(
        request,
        title="Actions on every matching job",
        crumbs=[
            ("Jobs", reverse("admin:django_workhorse_job_changelist") + in_store["store_suffix"]),
            ("Actions", None),
        ],
        refresh=REFRESH_WHILE_RUNNING if any(a.running for a in found) else None,
        rows=[described(a) for a in found],
        **in_store,
    )
    return TemplateResponse(request, "admin/django_workhorse/bulk_actions.html", context)


def cancel_view(model_admin: Any, request: HttpRequest, object_id: str) -> HttpResponse:
    """Stop an action after the batch it is in (a POST)."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if not model_admin.has_change_permission(request):
        raise PermissionDenied
    action_id = _action_id(object_id)
    store = model_admin.store(request)
    in_store = model_admin.store_context(store, reverse("admin:django_workhorse_job_changelist"))
    result = model_admin.service(store).cancel_bulk_action(action_id, by=username_of(request))
    level = messages.WARNING if result.status in ("unchanged", "unknown") else messages.SUCCESS
    messages.add_message(request, level, result.message)
    return HttpResponseRedirect(action_url(model_admin, action_id, in_store["store_suffix"]))


def banner(service: Admin) -> list[dict[str, Any]]:
    """The running actions, for the job list's banner."""
    try:
        return [described(a) for a in service.bulk_actions(running_only=True, limit=10)]
    except InvalidQueryError:
        return []
