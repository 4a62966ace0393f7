"""A real Chromium, driven by Playwright, against ``live_server``.

Debian's ``chromium`` package provides the browser where it is installed
(``make test`` installs it when run as root, ``make browser`` too); elsewhere
the browser of ``playwright install chromium``, which ``make test`` runs for
anyone else. The ORM is used from the test while Playwright's sync
API keeps an event loop in this thread, hence DJANGO_ALLOW_ASYNC_UNSAFE.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

CHROMIUM = os.environ.get("WORKHORSE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture
def browser(monkeypatch) -> Iterator:
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        # Debian's chromium, else the one `playwright install chromium` fetched.
        executable = CHROMIUM if shutil.which(CHROMIUM) else None
        if executable is None and not os.path.exists(p.chromium.executable_path):
            pytest.fail(
                f"no chromium: {CHROMIUM} is missing and Playwright has none; run "
                "`make browser` (apt-get install chromium, as root) or "
                "`.venv/bin/python -m playwright install chromium`"
            )
        chromium = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="session", autouse=True)
def _live_server_sessions_closed(django_db_setup, django_db_blocker) -> Iterator[None]:
    """End the test database's sessions that ``live_server``'s request threads
    left open, before the test database is dropped.

    A request thread can end without closing its Django connection (the
    browser closing its page while a response is written); the session then
    outlives the thread, and dropping the test database waited five seconds
    for it and failed ("being accessed by other users").
    """
    yield
    from django.db import connection

    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
