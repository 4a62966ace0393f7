"""The pages look like the rest of the admin they sit in (docs/admin.md):
their breadcrumbs are the element the running Django's admin styles."""

from __future__ import annotations

import re

import pytest

from tests.factories import FailedJobFactory

pytestmark = pytest.mark.django_db

JOBS = "/admin/django_workhorse/job/"
QUEUES = "/admin/django_workhorse/queue/"


def breadcrumbs_tag(body: str) -> str:
    """The opening tag of the breadcrumbs (``<ol class="breadcrumbs">`` on
    Django 6, ``<div class="breadcrumbs">`` on 5.2)."""
    match = re.search(r'<(\w+) class="breadcrumbs">', body)
    assert match, "the page has no breadcrumbs"
    return match.group(0)


def test_the_breadcrumbs_are_the_element_djangos_own_admin_pages_use(operator_client):
    """Bug: the pages wrote Django 5.2's <div class="breadcrumbs">, which
    Django 6's stylesheet no longer styles: a bare line without the bar."""
    job = FailedJobFactory()
    django_page = operator_client.get("/admin/password_change/").content.decode()

    for path in (JOBS, f"{JOBS}{job.id}/", QUEUES):
        body = operator_client.get(path).content.decode()
        assert breadcrumbs_tag(body) == breadcrumbs_tag(django_page), path


def test_a_jobs_breadcrumbs_lead_back_to_the_job_list(operator_client):
    job = FailedJobFactory()

    body = operator_client.get(f"{JOBS}{job.id}/").content.decode()

    crumbs = body[body.index('class="breadcrumbs"') :].split("</nav>")[0]
    assert f'href="{JOBS}"' in crumbs and f"#{job.id}" in crumbs
