"""User code that must type-check under ``mypy --strict``: how the public
surface reads to a type checker (tests/typing/test_public_types.py runs it).

Never imported by the tests: the job definitions here are for the checker only.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import django_workhorse as workhorse
from django_workhorse import AsyncJobDefinition, BoundJob, JobDefinition, JobFailure, JobHandle


@workhorse.job
def add(a: int, b: int = 0) -> int:
    return a + b


@workhorse.job(queue="email", max_attempts=3, timeout=timedelta(seconds=30))
def send_invoice(invoice_id: int, *, urgent: bool = False) -> dict[str, int]:
    return {"invoice_id": invoice_id}


@workhorse.job(queue="fetch", backoff=workhorse.fixed(5), retry_on=(TimeoutError,))
async def fetch(url: str) -> bytes:
    return url.encode()


@workhorse.job
async def ping() -> None:
    return None


def enqueue_them() -> None:
    total: JobHandle[int] = add.enqueue(1, b=2)
    invoice: JobHandle[dict[str, int]] = send_invoice.enqueue(invoice_id=42)
    later: JobHandle[dict[str, int]] = send_invoice.options(
        delay=timedelta(minutes=5), priority=10, idempotency_key="inv-43"
    ).enqueue(43, urgent=True)
    at: JobHandle[int] = add.options(run_at=datetime.now(UTC)).options(queue="math").enqueue(a=1)
    page: JobHandle[bytes] = fetch.enqueue("https://example.com")
    pong: JobHandle[None] = ping.enqueue()
    many: list[JobHandle[int]] = add.enqueue_many([{"a": 1}, {"a": 2, "b": 3}])
    by_name: JobHandle[object] = workhorse.enqueue("app.jobs.add", a=1)
    result: int | None = total.result
    print(invoice, later, at, page, pong, many, by_name, result)


async def from_async_code() -> None:
    handle: JobHandle[int] = await add.aenqueue(2, 3)
    body: bytes = await fetch("https://example.com")  # calling runs the handler in-process
    print(handle, body)


def direct_call() -> int:
    return add(1, 2) + send_invoice(7)["invoice_id"]


def definitions() -> None:
    plain: JobDefinition[[int, int], int] = add
    awaited: JobDefinition[[str], bytes] = fetch
    async_kind: AsyncJobDefinition[[str], bytes] = fetch
    bound: BoundJob[[int, int], int] = add.options(priority=1)
    print(plain, awaited, async_kind, bound)


def on_job_failure(failure: JobFailure) -> None:
    """An ``ON_JOB_FAILURE`` hook, typed."""
    if not failure.will_retry:
        print(failure.job_id, failure.name, failure.queue, failure.attempt, failure.exception)
