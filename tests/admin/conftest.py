"""Users for the admin pages: a superuser-like operator who may act, and a
staff user who may only look."""

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
        ["view_job", "change_job", "view_queue", "change_queue"],
    )


@pytest.fixture
def viewer(django_user_model):
    """May see jobs and queues, but not act."""
    return _staff(django_user_model, "viewer", ["view_job", "view_queue"])


@pytest.fixture
def operator_client(client, operator):
    client.force_login(operator)
    return client


@pytest.fixture
def viewer_client(client, viewer):
    client.force_login(viewer)
    return client
