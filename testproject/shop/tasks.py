"""A Django task, stored and run by workhorse like the app's jobs."""

from __future__ import annotations

try:
    from django.tasks import task
except ImportError:  # Django 5.2: the django-tasks backport
    from django_tasks import task


@task(queue_name="shop")
def notify_warehouse(order_id: int) -> str:
    return f"warehouse told about order {order_id}"
