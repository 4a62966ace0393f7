"""The failures page: the last window's failed runs, grouped by job and error type."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import urlencode

from .base import OperatorAdmin, format_when, in_store_query


class FailuresPage(OperatorAdmin):
    """The failures page."""

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
                    "last_at": format_when(g.last_at, "%Y-%m-%d %H:%M:%S"),
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
