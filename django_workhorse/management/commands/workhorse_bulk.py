"""``manage.py workhorse_bulk retry|cancel [filters]``: ask for a filter-wide
action, run by a worker as a job; ``workhorse_bulk status|stop ID`` to
follow or stop one."""

from __future__ import annotations

import getpass
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from ...db.preflight import explained
from ...exceptions import WorkhorseError
from ...operations.admin_api import Admin
from ...operations.bulk_actions import BulkAction
from ._operator import database_alias

PERMISSION = "manage.py (shell access)"
"""What the record says of the asker's right to act: whoever runs manage.py
may change the database directly anyway."""


def _line(action: BulkAction) -> str:
    total = "?" if action.total is None else f"{action.total:,}"
    text = (
        f"action #{action.id} ({action.action} {action.filter_text}): {action.status}, "
        f"{action.matched:,} / {total} done, {action.changed:,} changed, "
        f"{action.requested:,} asked to stop, {action.skipped:,} skipped"
    )
    if action.rate is not None:
        text += f", {action.rate:,.0f} jobs/s"
    return text


class Command(BaseCommand):
    help = (
        "Retry or cancel every job a filter matches, as a job a worker runs "
        "(queue workhorse.operator); or show or stop such an action."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["retry", "cancel", "status", "stop"])
        parser.add_argument("id", nargs="?", type=int, help="the action's id (status, stop)")
        parser.add_argument("--queue", default=None)
        parser.add_argument("--name", default=None, help="the job name")
        parser.add_argument("--state", default=None)
        parser.add_argument("--reason", default=None, help="kept in each canceled job's record")
        parser.add_argument(
            "--by", default=None, help="who asks (default: the user running the command)"
        )
        parser.add_argument("--database", default=None, help="database alias (default: DATABASE)")

    def handle(self, *args: Any, action: str, database: str | None, **options: Any) -> None:
        alias = database_alias(database)
        try:
            admin = Admin(using=alias)
            self.stdout.write(self._run(admin, action, options))
        except WorkhorseError as exc:
            raise CommandError(str(exc)) from exc
        except DatabaseError as exc:
            if (better := explained(exc, alias)) is not None:
                raise CommandError(str(better)) from None
            raise CommandError(f"workhorse_bulk {action} on database {alias!r}: {exc}") from exc

    def _run(self, admin: Admin, action: str, options: dict[str, Any]) -> str:
        action_id = options["id"]
        if action in ("status", "stop"):
            if action_id is None:
                if action == "stop":
                    raise CommandError("workhorse_bulk stop needs the action's id")
                return "\n".join(_line(a) for a in admin.bulk_actions()) or "no actions"
            if action == "stop":
                return admin.cancel_bulk_action(action_id, by=options["by"] or _user()).message
            found = admin.bulk_action(action_id)
            if found is None:
                raise CommandError(f"there is no action #{action_id}")
            return _line(found)
        if action_id is not None:
            raise CommandError(
                f"workhorse_bulk {action} takes filters (--queue, --name, --state), not an id"
            )
        asked = admin.start_bulk(
            action,
            queue=options["queue"],
            name=options["name"],
            state=options["state"],
            reason=options["reason"],
            by=options["by"] or _user(),
            permission=PERMISSION,
        )
        if not asked.inserted:
            return f"already {asked.status}, nothing new asked for: {_line(asked)}"
        return f"asked for: {_line(asked)}; follow it with workhorse_bulk status {asked.id}"


def _user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None
