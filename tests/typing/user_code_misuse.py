"""User code that must NOT type-check: each line marked ``# expect: <code>``
is an error mypy must report there with that code, and no other line may be
one (tests/typing/test_public_types.py). Never imported.
"""

from __future__ import annotations

from datetime import timedelta

import django_workhorse as workhorse
from django_workhorse import JobHandle


@workhorse.job
def add(a: int, b: int = 0) -> int:
    return a + b


@workhorse.job(queue="email")
def send_invoice(invoice_id: int, *, urgent: bool = False) -> dict[str, int]:
    return {"invoice_id": invoice_id}


@workhorse.job
async def fetch(url: str) -> bytes:
    return url.encode()


def misuse() -> None:
    add.enqueue("one")  # expect: arg-type
    add.enqueue(1, c=2)  # expect: call-arg
    add.enqueue()  # expect: call-arg
    send_invoice.enqueue(42, True)  # expect: call-arg
    send_invoice.options(priority=1).enqueue(invoice_id="42")  # expect: arg-type
    send_invoice.options(delay=timedelta(seconds=1)).enqueue(invoice=42)  # expect: call-arg
    send_invoice.options(prority=1)  # expect: call-arg
    send_invoice.options(priority="high")  # expect: arg-type
    fetch.enqueue(url=b"bytes")  # expect: arg-type
    wrong: JobHandle[str] = add.enqueue(1)  # expect: assignment
    not_awaited: bytes = fetch("u")  # expect: assignment
    print(wrong, not_awaited)


@workhorse.job(queu="typo")  # expect: call-overload
def typo() -> None:
    return None
