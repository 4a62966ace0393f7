"""``manage.py workhorse_prune [--dry-run]``: run retention now and say what it did."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connections

from ...core.conf import get_retention
from ...db.preflight import explained
from ...operations.retention import prune
from ._operator import database_alias, database_help


class Command(BaseCommand):
    help = (
        "Drop history partitions and delete finished jobs past WORKHORSE['RETENTION']. "
        "Live jobs are never touched."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="print what would be dropped or deleted, and change nothing",
        )
        parser.add_argument("--database", default=None, help=database_help("database alias"))

    def handle(self, *args: Any, dry_run: bool, database: str | None, **options: Any) -> None:
        alias = database_alias(database)
        try:
            settings = get_retention()
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from exc
        try:
            with connections[alias].cursor() as cursor:
                report = prune(cursor, dry_run=dry_run, settings=settings)
        except DatabaseError as exc:
            if (better := explained(exc, alias)) is not None:
                raise CommandError(str(better)) from None
            raise CommandError(f"prune failed on database {alias!r}: {exc}") from exc
        for line in report.lines():
            self.stdout.write(line)
        if report.busy:
            raise CommandError("another prune is running on this database; try again later")
