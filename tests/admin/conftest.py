"""Users for the admin pages: a superuser-like operator who may act, a
staff user who may only look, and a support user who may look at states
but not at what jobs carry (no ``view_job_payload``)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission


def _staff(django_user_model, username: str, codenames: list[str]):
    user = django_user_model.objects.create_user(username=username, password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="django_workhorse", codename__in=codenames
        )
    )
    return user


@pytest.fixture
def operator(django_user_model):
    """May see and act (view and change permissions on jobs and queues)."""
    return _staff(
        django_user_model,
        "operator",
        ["view_job", "change_job", "view_queue", "change_queue", "view_job_payload"],
    )


@pytest.fixture
def viewer(django_user_model):
    """May see jobs (with their payloads) and queues, but not act."""
    return _staff(django_user_model, "viewer", ["view_job", "view_queue", "view_job_payload"])


@pytest.fixture
def support(django_user_model):
    """May see jobs' states and queues, not payloads, results or error messages."""
    return _staff(django_user_model, "support", ["view_job", "view_queue"])


@pytest.fixture
def support_client(client, support):
    client.force_login(support)
    return client


@pytest.fixture
def operator_client(client, operator):
    client.force_login(operator)
    return client


@pytest.fixture
def viewer_client(client, viewer):
    client.force_login(viewer)
    return client
