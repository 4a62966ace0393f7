"""Which database aliases hold jobs: the stores.

A Django database alias plays the role of a named store: a job is bound to
one alias (``@job(using=...)``, else ``WORKHORSE['DATABASE']``) and a worker
serves one alias. The admin's store switch and ``workhorse_status`` show the
stores listed here: ``WORKHORSE['STORES']`` when it is set, else
``WORKHORSE['DATABASE']`` followed by every other alias a registered job is
bound to. ``manage.py check`` reports a ``STORES`` that is not a list of
aliases, or that leaves out an alias jobs are bound to (``workhorse.E008``),
since the jobs of a store missing from the list would be invisible to
operators.
"""

from __future__ import annotations

from typing import Any

from django.db import connections

from . import registry
from .conf import job_defaults, raw_settings
from .limits import shown


def store_aliases() -> list[str]:
    """The stores, the default one (``WORKHORSE['DATABASE']``) first.

    Read when asked, as every setting is; a ``STORES`` value that
    ``manage.py check`` would refuse falls back to the derived list, so that
    a page showing stores never fails on it."""
    default = job_defaults().database
    listed = raw_settings().get("STORES")
    if listed is not None and not stores_problems(listed):
        return [default, *(alias for alias in listed if alias != default)]
    bound = {definition.using for definition in registry.all_jobs().values()}
    bound.discard(default)
    return [default, *sorted(bound)]


def stores_problems(listed: Any) -> list[str]:
    """What is wrong with a ``WORKHORSE['STORES']`` value; empty when all is well."""
    aliases = list(connections.databases)
    if listed is None:
        return []
    example = ", ".join(repr(alias) for alias in aliases[:2])
    if (
        not isinstance(listed, list | tuple)
        or not listed
        or not all(isinstance(alias, str) for alias in listed)
    ):
        return [
            f"must be a non-empty list of aliases of settings.DATABASES such as [{example}], "
            f"or None to list WORKHORSE['DATABASE'] and every alias a job is bound to; "
            f"got {shown(listed)}"
        ]
    found = [
        f"names {alias!r}, which is not an alias of settings.DATABASES ({', '.join(aliases)})"
        for alias in listed
        if alias not in aliases
    ]
    repeated = sorted({alias for alias in listed if listed.count(alias) > 1})
    if repeated:
        found.append(f"names {', '.join(map(repr, repeated))} more than once")
    default = job_defaults().database
    if default not in listed:
        found.append(
            f"leaves out WORKHORSE['DATABASE'] ({default!r}), the store of every job that "
            "names no other"
        )
    return found


def unlisted_bindings(listed: Any) -> list[tuple[str, str]]:
    """(job name, alias) of each registered job bound to an alias that a
    valid ``STORES`` list leaves out."""
    if listed is None or stores_problems(listed):
        return []
    return sorted(
        (name, definition.using)
        for name, definition in registry.all_jobs().items()
        if definition.using not in listed
    )


def store_or_none(alias: str) -> str | None:
    """``alias`` if it is a store, else None (the admin answers 404)."""
    return alias if alias in store_aliases() else None
