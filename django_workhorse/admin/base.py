"""What every page of the admin shares: ``OperatorAdmin`` (the store switch,
the page context, read-only models), the payload permission and the
helpers that format times, durations and charts.

Rows are written by the SQL functions only, so nothing in the admin edits a
model; operator actions are POSTs with CSRF that call ``Admin`` and report
through Django messages. Seeing needs the view permission; acting needs the
change permission. Malformed ids, cursors and filters get a message or a
404, never a server error.

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
from django.db import connections, transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.http import urlencode

from ..core.stores import store_aliases
from ..db.snapshots import JobSnapshot
from ..exceptions import InvalidQueryError
from ..models import Job, Queue
from ..operations import admin_api
from ..operations.admin_api import Admin

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


def without_payload(job: JobSnapshot) -> JobSnapshot:
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


def refresh_of(request: HttpRequest) -> int | None:
    """The page's auto-refresh in seconds when the user turned it on."""
    return REFRESH_SECONDS if request.GET.get("refresh") == str(REFRESH_SECONDS) else None


def refresh_links(request: HttpRequest) -> dict[str, str]:
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


def report_result(request: HttpRequest, result: admin_api.ActionResult) -> None:
    messages.add_message(request, _LEVEL.get(result.status, messages.ERROR), result.message)


def username_of(request: HttpRequest) -> str | None:
    """Who acts, for the records of a cancel: the user's username, if any."""
    user = getattr(request, "user", None)
    name = user.get_username() if user is not None and user.is_authenticated else ""
    return name[:255] or None


def job_id_of(raw: str) -> int:
    """A job id from a URL or form, or Http404: a malformed id names no job."""
    if not raw.isascii() or not raw.isdigit() or len(raw) > 19:
        raise Http404(f"{raw[:40]!r} is not a job id")
    value = int(raw)
    if not 1 <= value <= admin_api.MAX_JOB_ID:
        raise Http404(f"{raw[:40]!r} is not a job id")
    return value


def format_seconds(value: float | None) -> str:
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


def format_when(value: datetime | None, pattern: str) -> str:
    """``value`` in the current time zone; a time the local calendar cannot
    hold (near the years 1 and 9999, which a run_at may be) in UTC, marked so."""
    if value is None:
        return ""
    try:
        local: datetime = timezone.localtime(value)
        return local.strftime(pattern)
    except (OverflowError, ValueError):
        return value.strftime(pattern) + " UTC"


def format_when_zoned(value: datetime | None) -> str:
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


def as_text(value: Any) -> str | None:
    """A stored error or event detail that is text rather than an object: the
    JSON text of a value Python could not decode (the store keeps it so), or a
    bare string a SQL caller stored. The page shows it as it is."""
    return value if isinstance(value, str) else None


def details_of(data: Any) -> str | None:
    """An event's data object as ``key: value; ...`` (its ``error`` is shown
    apart). Built here: in a template ``data.items`` looks the key ``items``
    up before the method, so an object holding that key could not be shown."""
    if not isinstance(data, dict):
        return None
    return "; ".join(f"{k}: {v}" for k, v in data.items() if k != "error") or None


def chart_of(counts: list[int], width: int = 72, height: int = 28) -> dict[str, Any]:
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
