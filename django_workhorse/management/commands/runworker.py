"""``manage.py runworker``: run django-workhorse workers.

A thin layer over ``django_workhorse.worker.Worker``: flags are checked here
(bad values are refused with a message naming the flag), everything else is
the Worker's.
"""

from __future__ import annotations

import argparse
import logging
import sys

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from ...conf import QUEUE_NAME_RE, get_settings, queue_name_problem
from ...exceptions import SchemaVersionError
from ...worker.supervisor import Supervisor, child_argv
from ...worker.worker import Worker, resolve_options

VERBOSITY_LEVELS = {0: logging.ERROR, 1: logging.WARNING, 2: logging.INFO, 3: logging.DEBUG}


def whole_number(low: int):
    """An argparse type: a whole number of at least ``low``."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
        if number < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {number}")
        return number

    return parse


positive_int = whole_number(1)


def positive_seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {value!r}") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {value}")
    return number


SETTING_FLAGS = {
    "lock_duration": ("LOCK_DURATION", positive_seconds),
    "lock_renew_interval": ("LOCK_RENEW_INTERVAL", positive_seconds),
    "stalled_interval": ("STALLED_INTERVAL", positive_seconds),
    "poll_interval": ("POLL_INTERVAL", positive_seconds),
    "shutdown_grace": ("SHUTDOWN_GRACE", positive_seconds),
}
"""Flags that override a WORKHORSE setting for this run: dest -> (key, type)."""


def queue_list(value: str) -> list[str]:
    names = [name.strip() for name in value.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name at least one queue, e.g. --queues email,default")
    for name in names:
        if not QUEUE_NAME_RE.match(name):
            raise argparse.ArgumentTypeError(queue_name_problem(name))
    return names


class Command(BaseCommand):
    help = "Run django-workhorse workers: claim jobs from the database and run their handlers."
    requires_system_checks = []  # the worker checks the schema itself, naming the fix

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--queues",
            type=queue_list,
            help="comma-separated queues to serve (default: every queue with a registered job)",
        )
        parser.add_argument(
            "--concurrency",
            type=positive_int,
            help="slots per queue unless WORKHORSE['QUEUES'] or the job sets one "
            "(default: WORKHORSE['CONCURRENCY'])",
        )
        parser.add_argument(
            "--database", help="the database alias to serve (default: WORKHORSE['DATABASE'])"
        )
        parser.add_argument("--id", dest="worker_id", help="prefix of this worker's id")
        parser.add_argument(
            "--processes",
            type=positive_int,
            default=1,
            help="run N worker processes under a supervisor that restarts crashed ones",
        )
        parser.add_argument("--burst", action="store_true", help="run what is due, then exit 0")
        for dest, (key, kind) in SETTING_FLAGS.items():
            parser.add_argument(
                "--" + dest.replace("_", "-"),
                dest=dest,
                type=kind,
                help=f"override WORKHORSE['{key}'] for this run",
            )

    def handle(self, *args, **options) -> None:
        logging.getLogger("django_workhorse").setLevel(
            VERBOSITY_LEVELS.get(options["verbosity"], logging.DEBUG)
        )
        if not logging.getLogger().handlers and not logging.getLogger("django_workhorse").handlers:
            logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s %(message)s")
        try:
            overrides = {
                key: options[dest]
                for dest, (key, _kind) in SETTING_FLAGS.items()
                if options[dest] is not None
            }
            settings = get_settings(overrides)
            worker_options = resolve_options(
                alias=options["database"],
                queues=options["queues"],
                concurrency=options["concurrency"],
                worker_id=options["worker_id"],
                burst=options["burst"],
                settings=settings,
            )
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from exc
        if options["processes"] > 1:
            if options["burst"]:
                raise CommandError("--burst runs one process; drop --processes")
            code = Supervisor(child_argv(sys.argv), options["processes"]).run()
            sys.exit(code)
        worker = Worker(worker_options)
        worker.install_signal_handlers()
        try:
            code = worker.run()
        except SchemaVersionError as exc:
            raise CommandError(str(exc)) from exc
        if code:
            sys.exit(code)
