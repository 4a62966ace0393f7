"""``manage.py workhorse_queue pause|resume NAME``: stop or restart claiming from a queue."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from ...db.preflight import explained
from ...exceptions import WorkhorseError
from ...operations.admin_api import Admin
from ._operator import database_alias, database_help


class Command(BaseCommand):
    help = "Pause or resume a queue: a paused queue hands out no jobs; running jobs finish."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["pause", "resume"])
        parser.add_argument("queue", help="the queue's name")
        parser.add_argument("--database", default=None, help=database_help("database alias"))

    def handle(
        self, *args: Any, action: str, queue: str, database: str | None, **options: Any
    ) -> None:
        alias = database_alias(database)
        try:
            admin = Admin(using=alias)
            result = admin.pause_queue(queue) if action == "pause" else admin.resume_queue(queue)
        except WorkhorseError as exc:
            raise CommandError(str(exc)) from exc
        except DatabaseError as exc:
            if (better := explained(exc, alias)) is not None:
                raise CommandError(str(better)) from None
            raise CommandError(
                f"cannot {action} queue {queue!r} on database {alias!r}: {exc}"
            ) from exc
        self.stdout.write(result.message)
