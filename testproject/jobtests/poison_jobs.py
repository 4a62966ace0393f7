"""Handlers that misbehave in every way a handler can, for the acceptance tests.

``poison(kind)`` (sync) and ``apoison(kind)`` (async) each do one bad thing,
named by ``kind``; ``mate(label)`` and ``amate(label)`` share their queues
and record a run, so a test can see the worker go on serving the others.
Imported by ``jobs.py``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import connection, transaction

import django_workhorse as workhorse

from .jobs import start_run

logger = logging.getLogger("jobtests")


class CustomBaseError(BaseException):
    """A BaseException that is neither Exception, SystemExit nor KeyboardInterrupt."""


class StrRaises(Exception):
    """An exception that cannot be described."""

    def __str__(self) -> str:
        raise RuntimeError("__str__ of StrRaises fails")

    def __repr__(self) -> str:
        raise RuntimeError("__repr__ of StrRaises fails")


class HugeText(Exception):
    """An exception whose description is megabytes long."""

    def __str__(self) -> str:
        return "huge " + "x" * 5_000_000

    def __repr__(self) -> str:
        return "HugeText(" + "y" * 5_000_000 + ")"


class ItemsRaise(dict):
    """A dict whose items cannot be read."""

    def items(self):  # type: ignore[override]
        raise RuntimeError("items() of ItemsRaise fails")


class IterRaises(list):
    """A list that cannot be iterated."""

    def __iter__(self):  # type: ignore[override]
        raise RuntimeError("__iter__ of IterRaises fails")


def _recurse(n: int) -> int:
    return _recurse(n + 1) + 1


def _cyclic_causes() -> Exception:
    first, second = ValueError("first of a cycle"), KeyError("second of a cycle")
    first.__cause__, second.__cause__ = second, first
    first.__context__, second.__context__ = second, first
    return first


def _long_chain(length: int) -> Exception:
    exc: Exception = ValueError("link 0")
    for index in range(1, length):
        try:
            raise ValueError(f"link {index}") from exc
        except ValueError as linked:
            exc = linked
    return exc


def _deep_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _cyclic_list() -> list[Any]:
    value: list[Any] = []
    value.append(value)
    return value


def _lingering_thread() -> None:
    time.sleep(3600)


def _do(kind: str) -> Any:
    """The bad thing named ``kind``, in a sync handler."""
    actions: dict[str, Callable[[], Any]] = {
        "system_exit": lambda: sys.exit(3),
        "keyboard_interrupt": lambda: (_ for _ in ()).throw(KeyboardInterrupt("from a handler")),
        "generator_exit": lambda: (_ for _ in ()).throw(GeneratorExit("from a handler")),
        "custom_base": lambda: (_ for _ in ()).throw(CustomBaseError("a custom BaseException")),
    }
    if kind in actions:
        return actions[kind]()
    if kind == "str_raises":
        raise StrRaises()
    if kind == "huge_text":
        raise HugeText()
    if kind == "cyclic_causes":
        raise _cyclic_causes()
    if kind == "long_chain":
        raise _long_chain(5_000)
    if kind == "recursion":
        return _recurse(0)
    if kind == "result_items_raise":
        return ItemsRaise(a=1)
    if kind == "result_iter_raises":
        return IterRaises([1])
    if kind == "result_deep":
        return _deep_list(200_000)
    if kind == "result_cyclic":
        return _cyclic_list()
    if kind == "open_autocommit":
        transaction.set_autocommit(False)
        start_run("uncommitted", finished=True)
        return "left a transaction open"
    if kind == "open_atomic":
        transaction.atomic().__enter__()
        start_run("uncommitted", finished=True)
        return "left an atomic block open"
    if kind == "close_connection":
        with transaction.atomic():
            start_run("closed", finished=True)
            connection.close()
        return "closed the connection in an atomic block"
    if kind == "break_connection":
        connection.ensure_connection()
        connection.connection.close()  # under Django's feet
        return "broke the connection"
    if kind == "terminate_backend":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        return "unreachable"
    if kind == "signal_handlers":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        return "changed the SIGTERM handler"
    if kind == "pg_sleep":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(3)")
        start_run("slept", finished=True)
        return "slept in the database"
    if kind == "non_daemon_thread":
        threading.Thread(target=_lingering_thread, name="lingering", daemon=False).start()
        return "left a thread behind"
    if kind == "environ_cwd":
        os.environ.clear()
        os.chdir("/")
        return "changed the environment and the cwd"
    if kind == "log_exc_info":
        try:
            raise StrRaises()
        except StrRaises:
            logger.error("a handler logs an error", exc_info=True)
        try:
            raise HugeText()
        except HugeText:
            logger.exception("a handler logs a huge one")
        return "logged"
    if kind == "print_megabytes":
        chunk = "z" * 1_000_000
        for _ in range(5):
            print(chunk)
            print(chunk, file=sys.stderr)
        return "printed"
    raise ValueError(f"unknown kind {kind!r}")


@workhorse.job(queue="jobtests.poison", max_attempts=1)
def poison(kind: str) -> Any:
    """Does the bad thing named ``kind`` (see ``_do``)."""
    start_run(kind, finished=True)
    return _do(kind)


@workhorse.job(queue="jobtests.poison", max_attempts=1)
def mate(label: str = "") -> str:
    """Records one run on the poison queue."""
    start_run(label, finished=True)
    return label


async def _child_raises(exc: BaseException) -> None:
    raise exc


@workhorse.job(queue="jobtests.apoison", max_attempts=1)
async def apoison(kind: str) -> Any:
    """Does the async bad thing named ``kind``."""
    from asgiref.sync import sync_to_async

    await sync_to_async(start_run)(kind, finished=True)
    if kind == "system_exit":
        raise SystemExit(3)
    if kind == "keyboard_interrupt":
        raise KeyboardInterrupt("from an async handler")
    if kind == "child_system_exit":
        await asyncio.gather(_child_raises(SystemExit(4)))
    if kind == "child_keyboard_interrupt":
        await asyncio.create_task(_child_raises(KeyboardInterrupt("from a child task")))
    if kind == "callback_system_exit":
        asyncio.get_running_loop().call_soon(sys.exit, 5)
        await asyncio.sleep(0.5)
        return "after the callback"
    if kind == "never_yields":
        end = time.monotonic() + 2.5
        while time.monotonic() < end:
            pass
        return "came back"
    if kind == "cancels_itself":
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        await asyncio.sleep(1)
        return "unreachable"
    if kind == "str_raises":
        raise StrRaises()
    if kind == "result_items_raise":
        return ItemsRaise(a=1)
    raise ValueError(f"unknown kind {kind!r}")


@workhorse.job(queue="jobtests.apoison", max_attempts=1)
async def amate(label: str = "") -> str:
    """Records one run on the async poison queue."""
    from asgiref.sync import sync_to_async

    await sync_to_async(start_run)(label, finished=True)
    return label
