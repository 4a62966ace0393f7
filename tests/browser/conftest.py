"""A real Chromium, driven by Playwright, against ``live_server``.

Debian's ``chromium`` package provides the browser (``make browser`` installs
it; ``.ci/run`` does so on a clean machine): Playwright's own browser
download is not used. The ORM is used from the test while Playwright's sync
API keeps an event loop in this thread, hence DJANGO_ALLOW_ASYNC_UNSAFE.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

CHROMIUM = os.environ.get("WORKHORSE_CHROMIUM", "/usr/bin/chromium")
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
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} not found: run `make browser` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
