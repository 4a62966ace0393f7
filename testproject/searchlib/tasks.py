"""The package's Django task, as a third party writes one."""

from __future__ import annotations

from django.core.exceptions import ObjectDoesNotExist

try:
    from django.tasks import task
except ImportError:  # Django 5.2: the backport
    from django_tasks import task


@task
def index_object(pk: int) -> int:
    """Indexes object ``pk``; a negative ``pk`` is an object deleted meanwhile
    (what a model's ``DoesNotExist`` says)."""
    if pk < 0:
        raise ObjectDoesNotExist(f"object {pk} no longer exists")
    return pk
