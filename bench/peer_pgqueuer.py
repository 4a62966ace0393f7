"""pgqueuer's half of the peer benchmark; runs under ``.bench-venv/bin/python`` only.

pgqueuer is not a dependency of django-workhorse. bench/peers.py installs it in
``.bench-venv`` (from bench/peers-constraints.txt) and runs this script there as
separate processes, so this is the only file that imports it. The database is
the one named by PGQUEUER_DSN. Every subcommand prints one JSON line on stdout:

    install                      pgqueuer's schema, with its own API; version, defaults
    enqueue N                    empty queue and log, enqueue N no-op jobs in bulk
    single N                     N no-op jobs enqueued one per call (one transaction each)
    singles                      the same in turns: reads a count per line on stdin, prints
                                 {"rate", "cpu_us"} per line (client CPU per enqueue)
    worker --batch B [--drain]   a pgqueuer worker (QueueManager via pgqueuer.run)
           [--starts FILE]       ... appending "job_id start_epoch" per handler start
    span                         jobs finished, seconds first pick -> last finish
    pickup N --starts FILE       N single enqueues to an idle worker; latencies in ms
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, TextIO

import asyncpg
import pgqueuer
from pgqueuer import QueueManager
from pgqueuer.db import AsyncpgDriver
from pgqueuer.domain.settings import db_settings
from pgqueuer.domain.types import QueueExecutionMode
from pgqueuer.models import Job
from pgqueuer.queries import Queries

ENTRYPOINT = "noop"
BULK = 1000  # jobs per enqueue call, as bench/worker.py enqueues ours


def emit(result: dict[str, Any]) -> None:
    print(json.dumps(result), flush=True)


async def connect() -> asyncpg.Connection:
    return await asyncpg.connect(
        os.environ["PGQUEUER_DSN"],
        server_settings={"application_name": "workhorse-bench-peer"},
    )


@asynccontextmanager
async def queries() -> AsyncIterator[Queries]:
    conn = await connect()
    try:
        yield Queries(AsyncpgDriver(conn))
    finally:
        await conn.close()


async def install() -> None:
    async with queries() as q:
        await q.install()
    emit(
        {
            "version": pgqueuer.__version__,
            # Read from the installed version, so the label follows an upgrade.
            "default_batch": inspect.signature(QueueManager.run).parameters["batch_size"].default,
            "durability": db_settings().durability.value,
        }
    )


async def enqueue(count: int) -> None:
    """Start each drain from an empty queue and log, like ours, then enqueue in bulk."""
    async with queries() as q:
        await q.clear_queue()
        await q.clear_queue_log()
        await q.clear_statistics_log()
        start = time.perf_counter()
        for offset in range(0, count, BULK):
            size = min(BULK, count - offset)
            await q.enqueue([ENTRYPOINT] * size, [None] * size, [0] * size)
        seconds = time.perf_counter() - start
        for table in (db_settings().qualified.queue_table, db_settings().qualified.queue_table_log):
            await q.driver.execute(f"VACUUM ANALYZE {table}")
    emit({"enqueued": count, "seconds": seconds})


async def single(count: int) -> None:
    """One job per call, each its own transaction: pgqueuer's single enqueue."""
    async with queries() as q:
        await q.clear_queue()
        await q.enqueue(ENTRYPOINT, None)  # warm up, as ours is
        start = time.perf_counter()
        for _ in range(count):
            await q.enqueue(ENTRYPOINT, None)
        seconds = time.perf_counter() - start
        await q.clear_queue()
    emit({"enqueued": count, "seconds": seconds})


async def singles() -> None:
    """``single`` on one connection, as often as asked: each line on stdin is a
    count, answered with the rate and this process's CPU per enqueue, so that
    bench/peers.py can take its turns against ours within a second."""
    loop = asyncio.get_running_loop()
    async with queries() as q:
        await q.clear_queue()
        for _ in range(50):  # warm up, as ours is
            await q.enqueue(ENTRYPOINT, None)
        # Its server process, whose CPU bench/peers.py reads around each turn.
        backend = (await q.driver.fetch("SELECT pg_backend_pid() AS pid"))[0]["pid"]
        emit({"ready": True, "backend_pid": backend})
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            count = int(line)
            cpu, start = time.process_time(), time.perf_counter()
            for _ in range(count):
                await q.enqueue(ENTRYPOINT, None)
            seconds = time.perf_counter() - start
            emit({"rate": count / seconds, "cpu_us": (time.process_time() - cpu) / count * 1e6})
        await q.clear_queue()


async def worker(batch: int, drain: bool, starts: str | None) -> None:
    """One worker the way ``pgq run`` starts it, with an async no-op handler.

    In drain mode pgqueuer stops by itself once the queue is empty; otherwise
    SIGTERM stops it (pgqueuer.run installs the handler).
    """
    handled = 0
    out: TextIO | None = open(starts, "a", buffering=1) if starts else None  # noqa: SIM115

    @asynccontextmanager
    async def factory() -> AsyncIterator[QueueManager]:
        conn = await connect()
        try:
            manager = QueueManager(Queries(AsyncpgDriver(conn)))

            @manager.entrypoint(ENTRYPOINT)
            async def noop(job: Job) -> None:
                nonlocal handled
                started = time.time()
                if out is not None:
                    out.write(f"{job.id} {started!r}\n")
                handled += 1

            yield manager
        finally:
            await conn.close()

    try:
        await pgqueuer.run(
            factory,
            batch_size=batch,
            mode=QueueExecutionMode.drain if drain else QueueExecutionMode.continuous,
        )
    finally:
        if out is not None:
            out.close()
    emit({"handled": handled})


async def span() -> None:
    """Our drain rate's definition on pgqueuer's own log: first pick to last finish.

    pgqueuer writes a log row when it picks a batch (in the dequeue statement)
    and when it deletes finished jobs from the queue (its buffered completion
    flush); ``created`` is now() of those transactions, the database's clock.
    """
    log = db_settings().qualified.queue_table_log
    queue = db_settings().qualified.queue_table
    async with queries() as q:
        row = (
            await q.driver.fetch(
                f"SELECT count(*) FILTER (WHERE status = 'successful') AS done,"
                f" extract(epoch FROM max(created) FILTER (WHERE status = 'successful')"
                f"  - min(created) FILTER (WHERE status = 'picked'))::float8 AS seconds,"
                f" (SELECT count(*) FROM {queue}) AS left_"
                f" FROM {log}"
            )
        )[0]
    emit({"done": row["done"], "seconds": row["seconds"] or 0.0, "left": row["left_"]})


async def wait_finished(q: Queries, job_id: int, timeout: float) -> bool:
    """Whether pgqueuer logged the job as successful within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(status == "successful" for _, status in await q.job_status([job_id])):
            return True
        await asyncio.sleep(0.005)
    return False


def read_starts(path: str) -> dict[int, float]:
    starts = {}
    with open(path) as f:
        for line in f:
            job_id, at = line.split()
            starts[int(job_id)] = float(at)
    return starts


async def pickup(samples: int, starts_path: str) -> None:
    """Enqueue-commit to handler-start latency, one job at a time to an idle worker.

    The first job also waits out the worker's start-up. Each later one is
    enqueued only once the previous one is logged as finished, so every pickup
    meets an idle worker (no backlog), as ours does.
    """
    async with queries() as q:
        (warm_up,) = await q.enqueue(ENTRYPOINT, None)
        if not await wait_finished(q, warm_up, 60):
            raise TimeoutError("the pgqueuer worker did not run the warm-up job in 60 s")
        await asyncio.sleep(0.5)
        committed: dict[int, float] = {}
        for _ in range(samples):
            (job_id,) = await q.enqueue(ENTRYPOINT, None)
            committed[job_id] = time.time()  # the enqueue's commit has returned
            await wait_finished(q, job_id, 10)
            await asyncio.sleep(0.005)
    deadline = time.monotonic() + 30
    starts = read_starts(starts_path)
    while time.monotonic() < deadline and not committed.keys() <= starts.keys():
        await asyncio.sleep(0.1)
        starts = read_starts(starts_path)
    latencies = [(starts[i] - at) * 1000 for i, at in committed.items() if i in starts]
    emit({"latencies_ms": latencies, "missing": samples - len(latencies)})


def run(coro: Coroutine[Any, Any, None]) -> None:
    """On uvloop when it is there, as ``pgq run`` does."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(coro)
    else:
        uvloop.run(coro)


def main() -> None:
    parser = argparse.ArgumentParser(prog="peer_pgqueuer.py")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install")
    sub.add_parser("enqueue").add_argument("count", type=int)
    sub.add_parser("single").add_argument("count", type=int)
    sub.add_parser("singles")
    w = sub.add_parser("worker")
    w.add_argument("--batch", type=int, required=True)
    w.add_argument("--drain", action="store_true")
    w.add_argument("--starts")
    sub.add_parser("span")
    p = sub.add_parser("pickup")
    p.add_argument("samples", type=int)
    p.add_argument("--starts", required=True)
    args = parser.parse_args()
    commands: dict[str, Callable[[], Coroutine[Any, Any, None]]] = {
        "install": install,
        "enqueue": lambda: enqueue(args.count),
        "single": lambda: single(args.count),
        "singles": singles,
        "worker": lambda: worker(args.batch, args.drain, args.starts),
        "span": span,
        "pickup": lambda: pickup(args.samples, args.starts),
    }
    run(commands[args.command]())


if __name__ == "__main__":
    main()
