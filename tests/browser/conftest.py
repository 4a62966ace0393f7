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
