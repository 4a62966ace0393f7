"""What the operator commands share: the database alias they act on."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import CommandError
from django.db import connections

from ...conf import get_settings
from ...preflight import not_postgresql


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
