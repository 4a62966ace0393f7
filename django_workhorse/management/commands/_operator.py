"""What the management commands share: the database alias they act on, and
the argparse type of a whole number."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections

from ...core.conf import get_settings
from ...db.preflight import not_postgresql


def database_alias(given: str | None) -> str:
    """``--database`` or the DATABASE setting, checked to be an alias."""
    try:
        # An empty --database= is a mistake to name, not a request for the default.
        alias = given if given is not None else get_settings().database
    except ImproperlyConfigured as exc:
        raise CommandError(str(exc)) from exc
    if alias not in connections:
        raise CommandError(
            f"{alias!r} is not an alias of settings.DATABASES ({', '.join(connections)})"
        )
    if problem := not_postgresql(alias):
        raise CommandError(problem)
    return alias


def database_help(what: str) -> str:
    """``--database``'s help: ``what``, and the alias used without the flag
    as the settings name it now (``WORKHORSE['DATABASE']``, "default" unless
    set), so ``--help`` shows the real default, not the setting's name."""
    try:
        alias = get_settings().database
    except ImproperlyConfigured:  # the command itself says what is wrong
        return f"{what} (default: WORKHORSE['DATABASE'])"
    return f"{what} (default: {alias!r}, from WORKHORSE['DATABASE'])"


class AliasCommand(BaseCommand):
    """A command run as the schema's owner on one alias, ``--database``
    (default "default"), without the system checks: what they would refuse
    may be what the command is for."""

    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--database", default="default", help="the database alias")


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``low`` (and at most ``high``)."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
        if number < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {number}")
        if high is not None and number > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}, got {number}")
        return number

    return parse


positive_int = whole_number(1)
