"""Every option the code accepts is in the docs' tables, and every option a
table names is one the code accepts: ``WORKHORSE`` keys (settings.md),
``RETENTION`` keys (retention.md), the Tasks backend's ``OPTIONS``
(django-tasks.md) and the flags of ``runworker`` (worker.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.management import load_command_class

from django_workhorse.core.conf import DEFAULTS, RETENTION_DEFAULTS
from django_workhorse.tasks.backend_options import OPTION_KEYS

DOCS = Path(__file__).resolve().parents[2] / "docs"
ROW_KEY = re.compile(r"^\| `([A-Z_]+)` \|", re.MULTILINE)


def table_keys(page: str, after: str = "") -> set[str]:
    text = (DOCS / page).read_text()
    return set(ROW_KEY.findall(text[text.index(after) :] if after else text))


@pytest.mark.parametrize(
    ("page", "after", "keys"),
    [
        ("settings.md", "", set(DEFAULTS)),
        ("retention.md", "| key | default | meaning |", set(RETENTION_DEFAULTS)),
        ("django-tasks.md", "| option | meaning | default |", set(OPTION_KEYS)),
    ],
    ids=["WORKHORSE", "RETENTION", "TASKS-OPTIONS"],
)
def test_each_table_names_exactly_the_keys_the_code_reads(page, after, keys):
    assert table_keys(page, after) == keys


def runworker_flags() -> set[str]:
    parser = load_command_class("django_workhorse", "runworker").create_parser(
        "manage.py", "runworker"
    )
    own = {"-h", "--help", "--version", "--settings", "--pythonpath", "--traceback"}
    own |= {"--no-color", "--force-color", "--skip-checks"}
    return {
        flag
        for action in parser._actions
        for flag in action.option_strings
        if flag.startswith("--") and flag not in own
    } | {"-v"}


def test_worker_md_shows_every_runworker_flag_and_no_other():
    text = (DOCS / "worker.md").read_text()
    start = text.index("```\nmanage.py runworker")
    usage = text[start : text.index("```", start + 3)]
    table = text[text.index("| flag | meaning |") : text.index("Malformed input")]
    flags = runworker_flags() - {"--verbosity"}
    assert set(re.findall(r"(--[a-z-]+|-v)\b", usage)) == flags
    # The table explains each, the setting flags as one row from first to last.
    explained = set(re.findall(r"^\| `(--[a-z-]+|-v)[` ]", table, re.MULTILINE))
    setting_flags = {"--lock-renew-interval", "--stalled-interval", "--poll-interval"}
    assert explained | setting_flags | {"--shutdown-grace"} == flags


DEFAULT_CELL = re.compile(r"^\| `([A-Z_]+)` \| `([^`]+)`( \([^)]*\))? \|", re.MULTILINE)


def test_the_defaults_settings_md_gives_are_the_defaults_in_force():
    from django.test import override_settings

    from django_workhorse.core.conf import get_settings, raw_settings

    documented = dict(
        (key, value) for key, value, _ in DEFAULT_CELL.findall((DOCS / "settings.md").read_text())
    )
    with override_settings(WORKHORSE={}):
        current = get_settings()
        raw = raw_settings()
    checked = 0
    for key, text in documented.items():
        if text == "{}" or text.startswith("None"):
            expected = {} if text == "{}" else None
        elif text.startswith('"'):
            expected = text.strip('"')
        elif re.fullmatch(r"\d+", text):
            expected = int(text)
        else:
            continue  # "half of LOCK_DURATION" and the like
        if key == "RETENTION":
            continue  # its own keys: retention.md
        # Read where it is read: keys the enqueue reads (DEFAULT_QUEUE, ...)
        # are not fields of the worker's settings.
        value = getattr(current, key.lower(), raw[key])
        assert value == expected, (key, text, value)
        checked += 1
    assert checked >= 15
