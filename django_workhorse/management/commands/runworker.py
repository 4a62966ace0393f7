"""``manage.py runworker``: run django-workhorse workers.

A thin layer over ``django_workhorse.worker.worker.Worker``: flags are checked here
(bad values are refused with a message naming the flag), everything else is
the Worker's.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import thread as futures_thread
from typing import Any

import psycopg
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connections

from ...core.conf import CADENCE_FLOORS, cadence_problem, get_settings, worker_id_problem
from ...core.limits import (
    CONCURRENCY_MAX,
    MAX_DURATION_SECONDS,
    PROCESSES_MAX,
    WORKER_ID_PREFIX_MAX,
    queue_name_problem,
    text_problem,
)
from ...db import installed_sql, store
from ...db.preflight import refuse_unless_postgresql
from ...exceptions import SchemaVersionError
from ...operations import logformat, metrics
from ...worker.logs import use_log_format
from ...worker.options import resolve_options
from ...worker.supervisor import Supervisor, child_argv
from ...worker.worker import Worker
from ._operator import database_help, positive_int, whole_number

VERBOSITY_LEVELS = {0: logging.ERROR, 1: logging.WARNING, 2: logging.INFO, 3: logging.DEBUG}


def port_number(value: str) -> int:
    number = positive_int(value)
    if number > 65535:
        raise argparse.ArgumentTypeError(f"a TCP port is at most 65535, got {number}")
    return number


def positive_seconds(value: str) -> float:
    """An argparse type: finite seconds, more than 0 and at most MAX_DURATION_SECONDS."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {value!r}") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {value}")
    if not number <= MAX_DURATION_SECONDS:  # the infinities too
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_DURATION_SECONDS} seconds, got {value}"
        )
    return number


def cadence_seconds(floor: float) -> Callable[[str], float]:
    """An argparse type: ``positive_seconds`` of at least ``floor`` (a lease
    or the period of a worker's loop)."""

    def parse(value: str) -> float:
        number = positive_seconds(value)
        if number < floor:
            raise argparse.ArgumentTypeError(f"{cadence_problem(floor)}, got {value}")
        return number

    return parse


def worker_id_prefix(value: str) -> str:
    """An argparse type: a worker id prefix, text PostgreSQL can store (an
    undecodable byte in the command line arrives as a lone surrogate) and
    at most WORKER_ID_PREFIX_MAX characters."""
    problem = text_problem(value, f"{value!r}")
    if problem or not value:
        raise argparse.ArgumentTypeError(problem or "must not be empty")
    if len(value) > WORKER_ID_PREFIX_MAX:
        raise argparse.ArgumentTypeError(worker_id_problem(value))
    return value


SETTING_FLAGS = {
    "lock_duration": ("LOCK_DURATION", cadence_seconds(CADENCE_FLOORS["LOCK_DURATION"])),
    "lock_renew_interval": (
        "LOCK_RENEW_INTERVAL",
        cadence_seconds(CADENCE_FLOORS["LOCK_RENEW_INTERVAL"]),
    ),
    "stalled_interval": ("STALLED_INTERVAL", cadence_seconds(CADENCE_FLOORS["STALLED_INTERVAL"])),
    "poll_interval": ("POLL_INTERVAL", cadence_seconds(CADENCE_FLOORS["POLL_INTERVAL"])),
    "shutdown_grace": ("SHUTDOWN_GRACE", positive_seconds),
}
"""Flags that override a WORKHORSE setting for this run: dest -> (key, type)."""


def queue_list(value: str) -> list[str]:
    """An argparse type: comma-separated queue names.

    Other workers take ``queue:slots`` here; this one sizes slots in settings,
    and a name in that form is refused with a message that says where.
    """
    names = [name.strip() for name in value.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name at least one queue, e.g. email,default")
    for name in names:
        if problem := queue_name_problem(name):
            queue, colon, slots = name.rpartition(":")
            if colon and slots.strip().isdigit() and not queue_name_problem(queue):
                raise argparse.ArgumentTypeError(
                    f"{name!r}: --queues takes queue names only; give queue {queue!r} "
                    f"{slots.strip()} slot(s) with WORKHORSE['QUEUES'][{queue!r}]['concurrency'], "
                    "or every served queue with --concurrency"
                )
            raise argparse.ArgumentTypeError(problem)
    return names


def exit_past_handler_threads(code: int, before: set[threading.Thread]) -> None:
    """End the process now if a handler left a non-daemon thread running.

    Python waits for every non-daemon thread before a process exits, so one
    started by a handler (and never ended) would keep a stopped worker
    running forever, deaf to further signals. The worker has written
    everything and released what still ran; such threads are given up, as
    the worker's own abandoned handler threads are. Only threads started
    while the worker ran count (not those of a process that called the
    command, ``before``), and not the workers of ``concurrent.futures``
    executors (asgiref's ``sync_to_async`` among them): idle ones end at
    exit when their executor is shut down.
    """
    lingering = [
        t.name
        for t in threading.enumerate()
        if t not in before
        and t.is_alive()
        and not t.daemon
        and t is not threading.main_thread()
        and getattr(t, "_target", None) is not futures_thread._worker
    ]
    if not lingering:
        return
    logging.getLogger("django_workhorse.worker").warning(
        "workhorse: %s non-daemon thread(s) started by handlers still run (%s); "
        "exiting without waiting for them",
        len(lingering),
        ", ".join(lingering[:10]),
    )
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


class Command(BaseCommand):
    help = "Run django-workhorse workers: claim jobs from the database and run their handlers."
    requires_system_checks: list[str] = []  # the worker checks the schema itself, naming the fix

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--queues",
            type=queue_list,
            help=(
                "comma-separated queues to serve, any name (one no known job uses is served "
                "with a warning naming the known queues it looks like); default: every queue "
                "with a registered job, plus WORKHORSE['QUEUES'], WORKHORSE['DEFAULT_QUEUE'] "
                "and the QUEUES of the workhorse TASKS backends"
            ),
        )
        parser.add_argument(
            "--exclude-queues",
            type=queue_list,
            help="comma-separated queues not to serve, out of the default ones",
        )
        parser.add_argument(
            "--max-jobs",
            type=whole_number(1),
            help="stop claiming after N jobs, finish them and exit 0 (a supervisor, or "
            "--processes, starts a fresh process)",
        )
        parser.add_argument(
            "--max-seconds",
            type=positive_seconds,
            help="stop claiming after S seconds, finish the running jobs and exit 0",
        )
        parser.add_argument(
            "--concurrency",
            type=whole_number(1, CONCURRENCY_MAX),
            help="slots per queue unless WORKHORSE['QUEUES'] or the job sets one "
            "(default: WORKHORSE['CONCURRENCY'])",
        )
        parser.add_argument("--database", help=database_help("the database alias to serve"))
        parser.add_argument(
            "--id", dest="worker_id", type=worker_id_prefix, help="prefix of this worker's id"
        )
        parser.add_argument(
            "--processes",
            type=whole_number(1, PROCESSES_MAX),
            default=1,
            help="run N worker processes under a supervisor that restarts crashed ones",
        )
        parser.add_argument("--burst", action="store_true", help="run what is due, then exit 0")
        parser.add_argument(
            "--metrics-port",
            type=port_number,
            help="serve Prometheus metrics over HTTP on this port (needs the prometheus extra; "
            "with --processes, one merged view of all the processes)",
        )
        parser.add_argument(
            "--metrics-addr",
            metavar="ADDRESS",
            help=f"the address --metrics-port listens on (default {metrics.DEFAULT_ADDR}, this "
            "host only; 0.0.0.0 or :: for every interface, behind a firewall)",
        )
        for dest, (key, kind) in SETTING_FLAGS.items():
            parser.add_argument(
                "--" + dest.replace("_", "-"),
                dest=dest,
                type=kind,
                help=f"override WORKHORSE['{key}'] for this run",
            )

    def handle(self, *args: Any, **options: Any) -> None:
        logging.getLogger("django_workhorse").setLevel(
            VERBOSITY_LEVELS.get(options["verbosity"], logging.DEBUG)
        )
        ours = logging.getLogger("django_workhorse")
        if not logging.getLogger().handlers and not ours.handlers:
            # Django's default LOGGING gives the root logger no handler: the
            # worker's records get one of their own. Not the root's: Django's
            # "django" logger prints (with DEBUG) and propagates to the root,
            # so each django.tasks line would be printed twice.
            handler = logging.StreamHandler()
            handler.setFormatter(
                logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s")
            )
            ours.addHandler(handler)
        try:
            overrides = {
                key: options[dest]
                for dest, (key, _kind) in SETTING_FLAGS.items()
                if options[dest] is not None
            }
            settings = get_settings(
                overrides,
                named={
                    key: "--" + dest.replace("_", "-")
                    for dest, (key, _kind) in SETTING_FLAGS.items()
                },
            )
            worker_options = resolve_options(
                alias=options["database"],
                queues=options["queues"],
                concurrency=options["concurrency"],
                worker_id=options["worker_id"],
                burst=options["burst"],
                settings=settings,
                exclude=options["exclude_queues"],
                max_jobs=options["max_jobs"],
                max_seconds=options["max_seconds"],
            )
            refuse_unless_postgresql(worker_options.alias)
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from exc
        if options["queues"] and options["exclude_queues"]:
            raise CommandError(
                "--exclude-queues takes queues off the default ones; with --queues, "
                "name only the queues to serve"
            )
        if options["processes"] > 1 and options["burst"]:
            raise CommandError("--burst runs one process; drop --processes")
        refuse_unusable_schema(worker_options.alias)
        logformat.set_process_worker_id(worker_options.worker_id)
        use_log_format(settings.log_format, worker_options.worker_id)
        addr = options["metrics_addr"]
        if addr is not None and options["metrics_port"] is None:
            raise CommandError(
                f"--metrics-addr {addr} is where metrics are served: add --metrics-port"
            )
        if options["metrics_port"] is not None:
            addr = metrics.DEFAULT_ADDR if addr is None else addr
            try:
                metrics.start_endpoint(
                    options["metrics_port"], merged=options["processes"] > 1, addr=addr
                )
            except ImproperlyConfigured as exc:
                raise CommandError(f"--metrics-port {options['metrics_port']}: {exc}") from exc
            except OSError as exc:  # an address it cannot listen on, a port in use
                raise CommandError(
                    f"--metrics-port {options['metrics_port']} on --metrics-addr {addr}: {exc}"
                ) from exc
        if options["processes"] > 1:
            code = Supervisor(child_argv(sys.argv), options["processes"]).run()
            sys.exit(code)
        worker = Worker(worker_options)
        worker.install_signal_handlers()
        threads_before = set(threading.enumerate())
        try:
            code = worker.run()
        except SchemaVersionError as exc:
            raise CommandError(str(exc)) from exc
        except psycopg.OperationalError as exc:
            # Only the first connection gets here; later losses are retried.
            raise CommandError(
                f"cannot connect to database {worker_options.alias!r}: {str(exc).strip()}"
            ) from exc
        exit_past_handler_threads(code, threads_before)
        if code:
            sys.exit(code)


def refuse_unusable_schema(alias: str) -> None:
    """A one-line CommandError, before any worker process starts, when the
    schema is not one this code speaks (the worker checks it again, for a
    ``Worker`` run without this command) or its SQL functions were changed
    by hand (``workhorse.E005``): a worker would run whatever they now do.
    A database that cannot be read here is left to the worker's own start,
    which says what is wrong with it."""
    newer: list[str] = []
    pending = None
    try:
        with connections[alias].cursor() as cursor:
            version_problem = store.schema_problem(store.schema_version(cursor))
            if version_problem is not None:
                raise CommandError(f"database {alias!r}: {version_problem}")
            problem = installed_sql.problem(cursor, alias)
            newer = installed_sql.newer_migrations(cursor)
            pending = installed_sql.pending_message(cursor, alias)
    except DatabaseError:
        problem = None
    finally:
        connections[alias].close()
    if problem is not None:
        raise CommandError(problem)
    if pending is not None:
        # The schema version is one this code speaks: the worker runs on it.
        logging.getLogger("django_workhorse").warning("workhorse: %s", pending)
    if newer:
        # A rolling deploy: the schema version (checked by the worker) says
        # whether this release still speaks the schema; its functions are
        # the newer release's.
        logging.getLogger("django_workhorse").warning(
            "workhorse: database %r was migrated by a newer django-workhorse (%s); "
            "this worker runs while the schema version is one it speaks",
            alias,
            ", ".join(newer),
        )
