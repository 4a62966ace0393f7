"""The Django admin over jobs: the operator's view, built on ``Admin``.

Three pages under the app's section: the job list (keyset-paged, never a
COUNT(*)), a job page with its timeline, and the queue dashboard. Rows are
written by the SQL functions only, so nothing here edits a model; operator
actions (retry, promote, cancel, pause, resume) are POSTs with CSRF that call
``Admin`` and report through Django messages. Seeing needs the view
permission; acting needs the change permission. Malformed ids, cursors and
filters get a message or a 404, never a server error.

With several stores (``stores.store_aliases()``), each page shows a store
switch and every link carries ``?store=ALIAS``; a URL without one shows
``WORKHORSE['DATABASE']``, so links made before a second store existed keep
working, and an alias that is not a store is a 404 naming the stores.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from datetime import datetime
from typing import Any, cast

import django
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import connections, transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from . import admin_actions, admin_api, configured_jobs, registry
from .admin_api import STATES, Admin, QueueStats
from .conf import get_settings
from .exceptions import InvalidQueryError, InvalidQueueLimitError, UnknownQueueError
from .limits import QUEUE_NAME_RE
from .models import Job, Queue
from .stores import store_aliases
from .unserved import WAITING_STATES, served_queues, unserved_note

PAGE_SIZE = 50
TIMELINE_PAGE = 100
JOB_ACTIONS = {
    "retry": "failed canceled",
    "retry_ignoring_dependencies": "failed canceled",
    "cancel": "blocked scheduled ready active",
    "promote": "scheduled",
}
"""Which states each job button is offered in (the retry that ignores
dependencies only for a job that has prerequisites)."""

JOB_ACTION_LABELS = {
    "retry": "Retry",
    "retry_ignoring_dependencies": "Retry ignoring prerequisites",
    "cancel": "Cancel",
    "promote": "Promote",
}

_LEVEL = {
    "changed": messages.SUCCESS,
    "requested": messages.SUCCESS,
    "unchanged": messages.WARNING,
}


PAYLOAD_PERMISSION = "django_workhorse.view_job_payload"
"""Who may see what jobs carry: payloads, results, checkpoint results, error
messages and tracebacks, event details, and search by payload. Without it,
the pages show states, times and error types only (docs/security.md)."""


def may_see_payload(request: HttpRequest) -> bool:
    """Whether the user holds ``PAYLOAD_PERMISSION`` (a superuser does)."""
    user = getattr(request, "user", None)
    return bool(user is not None and user.has_perm(PAYLOAD_PERMISSION))


def error_type_only(error: Any) -> dict[str, Any] | None:
    """An error envelope reduced to its type: what a user without the payload
    permission may see (the message and traceback quote the job's data)."""
    if isinstance(error, dict) and isinstance(error.get("type"), str):
        return {"type": error["type"]}
    return None if error is None else {"type": "error"}


def without_payload(job: admin_api.JobSnapshot) -> admin_api.JobSnapshot:
    """``job`` with its payload, result, checkpoint results and error message
    and traceback taken out, so that no template can show them."""
    return dataclasses.replace(
        job,
        payload={},
        result=None,
        error=error_type_only(job.error),
        checkpoints=tuple(dataclasses.replace(c, result=None) for c in job.checkpoints),
    )


def timeline_without_payload(entry: admin_api.TimelineEntry) -> admin_api.TimelineEntry:
    """A timeline entry with its error reduced to the type and no event details."""
    return dataclasses.replace(entry, error=error_type_only(entry.error), data=None)


REFRESH_SECONDS = 5
"""The opt-in auto-refresh of the job list and queues page (``?refresh=5``)."""

MATCHING_UNSUPPORTED = ("q", "prefix", "payload", "error_type")
"""List filters an action on every matching job does not take (it refuses them)."""

MATCHING_COUNT_CAP = 100_000
"""A filter-wide action counts what it will act on up to this many first."""


def outside_atomic_requests(view: Any) -> Any:
    """``view``, exempt from ``ATOMIC_REQUESTS`` on every alias: asking for an
    action on every matching job commits its record and its job in
    transactions of their own (one per store), so that a worker may take the
    job as soon as the request answers; the batches then run in the job."""

    @functools.wraps(view)
    def run(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response: HttpResponse = view(request, *args, **kwargs)
        return response

    for alias in connections:
        run = transaction.non_atomic_requests(using=alias)(run)
    return run


def _refresh(request: HttpRequest) -> int | None:
    """The page's auto-refresh in seconds when the user turned it on."""
    return REFRESH_SECONDS if request.GET.get("refresh") == str(REFRESH_SECONDS) else None


def _refresh_links(request: HttpRequest) -> dict[str, str]:
    """The page's own URL with auto-refresh turned on and off."""
    on, off = request.GET.copy(), request.GET.copy()
    on["refresh"] = str(REFRESH_SECONDS)
    off.pop("refresh", None)
    return {"on": "?" + on.urlencode(), "off": "?" + off.urlencode()}


def parse_payload_search(text: str) -> dict[str, Any]:
    """A payload search as typed: ``key=value`` (the value read as JSON when it
    is JSON, ``customer=42`` or ``vip=true``, else as text) or a JSON object.
    Raises InvalidQueryError naming the two forms."""
    text = text.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested too deep to read
            value = None
        if isinstance(value, dict) and value:
            return value
    elif "=" in text:
        key, _, raw = text.partition("=")
        key, raw = key.strip(), raw.strip()
        if key:
            try:
                parsed: Any = json.loads(raw)
            except (ValueError, RecursionError):
                parsed = raw
            return {key: parsed}
    raise InvalidQueryError(
        f"payload search {text[:60]!r}: write key=value (customer=42) or a JSON object "
        '({"customer": 42})'
    )


class NotAStore(Http404):
    """A URL's ``?store=`` names no store."""


def _report(request: HttpRequest, result: admin_api.ActionResult) -> None:
    messages.add_message(request, _LEVEL.get(result.status, messages.ERROR), result.message)


def _username(request: HttpRequest) -> str | None:
    """Who acts, for the records of a cancel: the user's username, if any."""
    user = getattr(request, "user", None)
    name = user.get_username() if user is not None and user.is_authenticated else ""
    return name[:255] or None


def _job_id(raw: str) -> int:
    """A job id from a URL or form, or Http404: a malformed id names no job."""
    if not raw.isascii() or not raw.isdigit() or len(raw) > 19:
        raise Http404(f"{raw[:40]!r} is not a job id")
    value = int(raw)
    if not 1 <= value <= admin_api.MAX_JOB_ID:
        raise Http404(f"{raw[:40]!r} is not a job id")
    return value


def _seconds(value: float | None) -> str:
    """A short human duration: 350 µs, 4.0 ms, 0.35 s, 4 min 2 s, 3 h 5 min, 2 d 4 h.
    Under 0.1 s in milliseconds or microseconds: a no-op job's attempt would
    read "0.00 s"."""
    if value is None:
        return ""
    if 0 <= value < 0.001:
        return f"{value * 1_000_000:.0f} µs"
    if 0 <= value < 0.1:
        return f"{value * 1000:.1f} ms"
    if value < 60:
        return f"{value:.2f} s" if value < 10 else f"{value:.0f} s"
    minutes, secs = divmod(int(value), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


def _when(value: datetime | None, pattern: str) -> str:
    """``value`` in the current time zone; a time the local calendar cannot
    hold (near the years 1 and 9999, which a run_at may be) in UTC, marked so."""
    if value is None:
        return ""
    try:
        local: datetime = timezone.localtime(value)
        return local.strftime(pattern)
    except (OverflowError, ValueError):
        return value.strftime(pattern) + " UTC"


def _when_zoned(value: datetime | None) -> str:
    """``value`` in the current time zone with the zone's abbreviation; a
    time the local calendar cannot hold (a schedule planned for the first or
    last hours of the years 1 to 9999) in UTC."""
    if value is None:
        return ""
    try:
        local: datetime = timezone.localtime(value)
        return local.strftime("%Y-%m-%d %H:%M:%S %Z")
    except (OverflowError, ValueError):
        return value.strftime("%Y-%m-%d %H:%M:%S") + " UTC"


def _as_text(value: Any) -> str | None:
    """A stored error or event detail that is text rather than an object: the
    JSON text of a value Python could not decode (the store keeps it so), or a
    bare string a SQL caller stored. The page shows it as it is."""
    return value if isinstance(value, str) else None


def _details(data: Any) -> str | None:
    """An event's data object as ``key: value; ...`` (its ``error`` is shown
    apart). Built here: in a template ``data.items`` looks the key ``items``
    up before the method, so an object holding that key could not be shown."""
    if not isinstance(data, dict):
        return None
    return "; ".join(f"{k}: {v}" for k, v in data.items() if k != "error") or None


def _chart(counts: list[int], width: int = 72, height: int = 28) -> dict[str, Any]:
    """Bars of a throughput chart, as SVG coordinates the template draws."""
    peak = max(counts, default=0) or 1
    step = width / max(len(counts), 1)
    bars = []
    for i, n in enumerate(counts):
        h = 0 if n == 0 else max(1.0, height * n / peak)
        bars.append(
            {
                "x": round(i * step + 1, 1),
                "y": round(height - h, 1),
                "w": round(step - 2, 1),
                "h": round(h, 1),
                "n": n,
            }
        )
    return {"width": width, "height": height, "bars": bars}


class OperatorAdmin(admin.ModelAdmin):
    """Rows are written by the SQL functions only: nothing is added, edited or
    deleted here. The change permission means "may act on jobs and queues"."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def service(self, store: str | None = None) -> Admin:
        return Admin(using=store)

    def store(self, request: HttpRequest) -> str:
        """The store a page shows or acts on: ``?store=``, else the default
        one; Http404 for an alias that is not a store."""
        stores = store_aliases()
        given: str | None = request.GET.get("store")
        if given is None:
            return stores[0]
        if given not in stores:
            raise NotAStore(
                f"{given[:40]!r} is not a django-workhorse store; the stores are "
                f"{', '.join(stores)} (WORKHORSE['STORES'], docs/admin.md#several-stores)"
            )
        return given

    def page(self, route: str, view: Any, name: str) -> URLPattern:
        """The URL of one of this model's pages, named as Django's admin names
        its own (``django_workhorse_<model>_<name>``): behind the admin's
        log-in, with an unknown ``?store=`` answered by ``store_checked``."""
        view = self.admin_site.admin_view(self.store_checked(view))
        return path(route, view, name=f"{self.opts.app_label}_{self.opts.model_name}_{name}")

    def store_checked(self, view: Any) -> Any:
        """``view``, answering a URL whose ``?store=`` is not a store with a
        404 page that says so and links to the stores."""

        @functools.wraps(view)
        def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            try:
                response: HttpResponse = view(request, *args, **kwargs)
            except NotAStore as exc:
                switch = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
                context = self.context(
                    request,
                    title="No such store",
                    message=str(exc),
                    **self.store_context(store_aliases()[0], switch, always=True),
                )
                return TemplateResponse(
                    request, "admin/django_workhorse/no_store.html", context, status=404
                )
            return response

        return checked

    def store_context(self, store: str, switch_url: str, *, always: bool = False) -> dict[str, Any]:
        """What the templates need to name ``store`` in their links: with one
        store nothing (the URLs stay as they were), with several a
        ``?store=`` suffix and the switch, whose links go to ``switch_url``."""
        stores = store_aliases()
        if len(stores) < 2 and not always:
            return {"store": store, "store_suffix": "", "store_param": "", "store_links": []}
        param = urlencode({"store": store})
        return {
            "store": store,
            "store_suffix": "?" + param,
            "store_param": param,
            "store_links": [
                {
                    "alias": alias,
                    "url": switch_url + "?" + urlencode({"store": alias}),
                    "selected": alias == store,
                }
                for alias in stores
            ],
        }

    def _url_if_seen(self, request: HttpRequest, model: type[Job | Queue]) -> str | None:
        """The list page of ``model``, or None when the user may not see it."""
        model_admin = self.admin_site.get_model_admin(model)
        if not model_admin.has_view_or_change_permission(request):
            return None
        return cast("str", reverse(f"admin:django_workhorse_{model._meta.model_name}_changelist"))

    def context(self, request: HttpRequest, **extra: Any) -> dict[str, Any]:
        """The admin's context for one of these pages. ``crumbs`` are the
        breadcrumbs after the app's, as (label, url or None) pairs; they are
        written as the running Django's own pages write theirs (an ``<ol>``
        from Django 6, a ``<div>`` before), which its stylesheet styles."""
        return {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "app_label": self.model._meta.app_label,
            "breadcrumbs_as_list": django.VERSION >= (6, 0),
            "crumbs": [(extra.get("title", ""), None)],
            "can_act": self.has_change_permission(request),
            "can_see_payload": may_see_payload(request),
            # None for a page the user may not see: no link to a 403.
            "queues_url": self._url_if_seen(request, Queue),
            "jobs_url": self._url_if_seen(request, Job),
            **extra,
        }


def in_store_query(in_store: dict[str, Any]) -> dict[str, str]:
    """The ``store`` query parameter of a page's links, when they carry one."""
    return {"store": in_store["store"]} if in_store["store_param"] else {}


@admin.register(Job)
class JobAdmin(OperatorAdmin):
    """The job list and the job page."""

    def get_urls(self) -> list[URLPattern]:
        return [
            self.page("", self.changelist_view, "changelist"),
            self.page("act/", self.bulk_action_view, "bulk"),
            self.page("act/all/", outside_atomic_requests(self.matching_view), "matching"),
            self.page("failures/", self.failures_view, "failures"),
            self.page("actions/", self.bulk_actions_view, "actions"),
            self.page("actions/<str:object_id>/", self.bulk_action_page_view, "action"),
            self.page("actions/<str:object_id>/cancel/", self.bulk_cancel_view, "action_cancel"),
            self.page("<str:object_id>/act/", self.action_view, "act"),
            self.page("<str:object_id>/cancel/", self.cancel_confirm_view, "cancel"),
            self.page("<str:object_id>/change/", self.change_view, "change"),
            self.page("<str:object_id>/", self.change_view, "page"),
        ]

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
                    "created": _when(job.created_at, "%Y-%m-%d %H:%M:%S"),
                    "when": _when(job.finished_at or job.run_at, "%Y-%m-%d %H:%M:%S"),
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
            refresh=_refresh(request),
            refresh_links=_refresh_links(request),
            failures_url=reverse("admin:django_workhorse_job_failures"),
            actions_url=reverse("admin:django_workhorse_job_actions"),
            running_actions=admin_actions.banner(service),
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

    def matching_view(self, request: HttpRequest) -> HttpResponse:
        """Retry or cancel every job the list's filter matches: GET shows how
        many (counted up to MATCHING_COUNT_CAP) and asks; POST asks for the
        action (``Admin.start_bulk``), which a worker runs as a job, and goes
        to the action's page (admin_actions.py)."""
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
            return admin_actions.start(
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
        return admin_actions.actions_view(self, request)

    def bulk_action_page_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return admin_actions.action_view(self, request, object_id)

    def bulk_cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return admin_actions.cancel_view(self, request, object_id)

    def failures_view(self, request: HttpRequest) -> HttpResponse:
        """Jobs that failed in the last 24 hours by name and error type, each
        group linking to its jobs (``Admin.failures``)."""
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        store = self.store(request)
        jobs_list = reverse("admin:django_workhorse_job_changelist")
        in_store = self.store_context(store, reverse("admin:django_workhorse_job_failures"))
        groups = self.service(store).failures()
        rows = []
        for g in groups:
            query = {"state": "failed", "name": g.name, "error_type": g.error_type}
            query.update(in_store_query(in_store))
            rows.append(
                {
                    "group": g,
                    "jobs_url": jobs_list + "?" + urlencode(query),
                    "last_url": reverse("admin:django_workhorse_job_page", args=[g.last_job_id])
                    + in_store["store_suffix"],
                    "last_at": _when(g.last_at, "%Y-%m-%d %H:%M:%S"),
                }
            )
        context = self.context(
            request,
            title="Failures, last 24 hours",
            crumbs=[("Jobs", jobs_list + in_store["store_suffix"]), ("Failures", None)],
            rows=rows,
            **in_store,
        )
        return TemplateResponse(request, "admin/django_workhorse/failures.html", context)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        job_id = _job_id(object_id)
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
                "duration": _seconds(e.duration),
                "at": _when(e.at, "%Y-%m-%d %H:%M:%S.%f"),
                "started": _when(e.started_at, "%H:%M:%S.%f"),
                "error_text": _as_text(e.error),
                "data_text": _as_text(e.data),
                "details": _details(e.data),
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
                    "written_at": _when(c.written_at, "%Y-%m-%d %H:%M:%S.%f"),
                    "attempt": c.attempt,
                }
                for c in job.checkpoints
            ],
            result_json=json.dumps(job.result, indent=2, ensure_ascii=False),
            error_text=_as_text(job.error),
            times={
                "created": _when(job.created_at, "%Y-%m-%d %H:%M:%S.%f"),
                "run_at": _when(job.run_at, "%Y-%m-%d %H:%M:%S.%f"),
                "sleeping_until": _when(job.sleeping_until, "%Y-%m-%d %H:%M:%S.%f"),
                "lease_expires_at": _when(job.lease_expires_at, "%H:%M:%S"),
                "finished": _when(job.finished_at, "%Y-%m-%d %H:%M:%S.%f"),
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
        job_id = _job_id(object_id)
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
        job_id = _job_id(object_id)
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
                result = service.cancel(job_id, reason, by=_username(request))
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
        _report(request, result)
        if result.status == "unknown":
            # No job page to go back to (it would be a 404 that shows no
            # message): the job list shows why nothing was done.
            return HttpResponseRedirect(reverse("admin:django_workhorse_job_changelist") + suffix)
        return HttpResponseRedirect(
            reverse("admin:django_workhorse_job_page", args=[job_id]) + suffix
        )

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
            ids = list(dict.fromkeys(_job_id(raw) for raw in request.POST.getlist("job")))
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
                action, ids, by=_username(request), reason=reason if action == "cancel" else None
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
                _report(request, result)
        return HttpResponseRedirect(target)


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
        parts.append(f"{stats.rate_limit} per {_seconds(stats.rate_period)}")
    return ", ".join(parts)


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
                    "seen": _seconds(w.seen_seconds_ago),
                    "since": _when(w.first_seen_at, "%Y-%m-%d %H:%M:%S"),
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
                    "oldest": _seconds(stats.oldest_ready_age),
                    "chart": _chart(stats.finished_per_bucket),
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
                "next_run": _when_zoned(row.next_run_at),
                "last_slot": _when_zoned(row.last_slot_at),
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
            refresh=_refresh(request),
            refresh_links=_refresh_links(request),
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
                f"{limits.rate} per {_seconds(limits.period)}" if limits.rate is not None else "",
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
                _report(request, service.pause_queue(name))
            elif action == "resume":
                _report(request, service.resume_queue(name))
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
