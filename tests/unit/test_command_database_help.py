"""``--help`` of the commands that act on one database shows the alias
they use without ``--database``: the one WORKHORSE['DATABASE'] names now,
not the setting's name."""

from __future__ import annotations

import pytest
from django.core.management import load_command_class


def help_text(command: str) -> str:
    parser = load_command_class("django_workhorse", command).create_parser("manage.py", command)
    return " ".join(parser.format_help().split())


@pytest.mark.parametrize("command", ["workhorse_prune", "workhorse_queue", "runworker"])
def test_database_help_names_the_real_default_alias(command):
    text = help_text(command)

    assert "(default: 'default', from WORKHORSE['DATABASE'])" in text
    assert "(default: DATABASE)" not in text


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_database_help_follows_the_setting(settings):
    settings.DATABASES = {**settings.DATABASES, "jobs": settings.DATABASES["default"]}
    settings.WORKHORSE = {**settings.WORKHORSE, "DATABASE": "jobs"}

    assert "(default: 'jobs', from WORKHORSE['DATABASE'])" in help_text("workhorse_prune")
