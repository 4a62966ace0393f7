"""A task outside ``tasks.py``: workers do not import this module at start-up,
so they must find the task by its import path when they claim its job."""

from __future__ import annotations

try:
    from django.tasks import task
except ImportError:  # Django 5.2: the backport
    from django_tasks import task


@task(queue_name="jobtests.tasks")
def shout(word: str) -> str:
    return word.upper()
