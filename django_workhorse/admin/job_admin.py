"""``JobAdmin``: the job pages' URLs, each page in a module of its own."""

from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern

from ..models import Job
from .base import outside_atomic_requests
from .failures_page import FailuresPage
from .job_list import JobListPage
from .job_matching import MatchingPages
from .job_page import JobPage


@admin.register(Job)
class JobAdmin(JobListPage, MatchingPages, FailuresPage, JobPage):
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
