"""A job's or task's definition, and whether it may be enqueued, do not depend
on the thread that asks nor on the Tasks backend instance it gets.

Django keeps one task backend per thread and builds new ones when ``TASKS``
changes. ``searchlib`` (testproject/searchlib) is shaped like Wagtail's
``modelsearch``: a package with an ``apps.py`` that ``INSTALLED_APPS`` never
names, imported by an installed app's ``ready()``. Every worker of the project
imports it the same way, so its task may be enqueued from anywhere.
(The runserver and runworker cases are in
tests/acceptance/test_enqueue_from_server_threads.py.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.db import connections
from django.test import override_settings
from searchlib.jobs import rebuild_index
from searchlib.tasks import index_object

from django_workhorse import Admin

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


def in_a_new_thread(enqueue: Callable[[], Any]) -> Any:
    """What ``enqueue()`` returns when called from a ``threading.Thread`` of
    its own (which closes its connections, as a server's threads do)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = enqueue()
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def stored_name(result_id: str) -> str:
    snapshot = Admin().get_job(int(result_id))
    assert snapshot is not None
    return snapshot.name


def test_a_third_party_task_enqueues_from_the_main_thread():
    result = index_object.enqueue(1)
    assert stored_name(result.id) == "searchlib.tasks.index_object"


def test_a_third_party_task_enqueues_from_a_new_thread():
    result = in_a_new_thread(lambda: index_object.enqueue(2))
    assert stored_name(result.id) == "searchlib.tasks.index_object"


def test_a_third_party_task_enqueues_from_many_threads_at_once():
    def enqueue(pk: int) -> str:
        try:
            return index_object.enqueue(pk).id
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=4) as pool:
        result_ids = list(pool.map(enqueue, range(3, 7)))
    assert {stored_name(result_id) for result_id in result_ids} == {"searchlib.tasks.index_object"}


def test_a_third_party_task_enqueues_after_override_settings_of_tasks():
    from django.conf import settings

    changed = {"default": {**settings.TASKS["default"], "OPTIONS": {"MAX_ATTEMPTS": 2}}}
    with override_settings(TASKS=changed):
        result = index_object.enqueue(7)
    assert stored_name(result.id) == "searchlib.tasks.index_object"
    snapshot = Admin().get_job(int(result.id))
    assert snapshot.max_attempts == 2


def test_a_third_party_task_enqueues_from_an_asgi_sync_view_thread():
    """An ASGI server runs a sync view in a thread of asgiref's executor."""

    def view() -> str:
        try:
            return index_object.enqueue(8).id
        finally:
            connections.close_all()

    result_id = async_to_sync(sync_to_async(view, thread_sensitive=False))()
    assert stored_name(result_id) == "searchlib.tasks.index_object"


def test_a_third_party_native_job_enqueues_from_a_new_thread():
    handle = in_a_new_thread(lambda: rebuild_index.enqueue(name="pages"))
    assert stored_name(str(handle.id)) == "searchlib.jobs.rebuild_index"
