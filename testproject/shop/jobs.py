"""An order's jobs: placing it charges the card and reserves stock, each of
which enqueues what follows. The receipt goes out an hour later.

Fulfilment is a graph enqueued at once: the parcel ships when the card is
charged and the parcel packed, and the warehouse hears of it after that."""

from __future__ import annotations

from datetime import timedelta

import django_workhorse as workhorse
from django_workhorse import JobHandle

from .tasks import notify_warehouse


class CardDeclined(Exception):
    """The payment provider said no."""


@workhorse.job(queue="shop")
def place_order(order_id: int, amount: int) -> str:
    charge_card.enqueue(order_id=order_id, amount=amount)
    reserve_stock.enqueue(order_id=order_id)
    return "placed"


@workhorse.job(queue="shop", max_attempts=3, backoff=workhorse.fixed(60))
def charge_card(order_id: int, amount: int) -> dict:
    if amount <= 0:
        raise CardDeclined(f"order {order_id}: nothing to charge")
    if workhorse.current_job().attempt == 1 and amount > 1000:
        raise ConnectionError("the provider timed out")  # retried a minute later
    send_receipt.options(delay=timedelta(hours=1)).enqueue(order_id=order_id)
    return {"order_id": order_id, "charged": amount}


@workhorse.job(queue="shop")
def reserve_stock(order_id: int) -> None:
    notify_warehouse.enqueue(order_id)


@workhorse.job(queue="shop")
def send_receipt(order_id: int) -> str:
    return f"receipt for order {order_id}"


@workhorse.job(queue="shop")
def pack_parcel(order_id: int) -> str:
    return f"parcel for order {order_id} packed"


@workhorse.job(queue="shop")
def ship_parcel(order_id: int) -> dict:
    """Runs once its prerequisites succeeded, and reads what they returned."""
    results = {p.name: p.result for p in workhorse.current_job().prerequisites()}
    return {"order_id": order_id, "charged": results["shop.jobs.charge_card"]["charged"]}


def fulfil(order_id: int, amount: int) -> JobHandle[dict]:
    """Enqueue an order's fulfilment (call it inside the order's transaction)."""
    charge = charge_card.enqueue(order_id=order_id, amount=amount)
    pack = pack_parcel.enqueue(order_id=order_id)
    ship = ship_parcel.options(depends_on=[charge, pack]).enqueue(order_id=order_id)
    notify_warehouse.using(depends_on=[ship]).enqueue(order_id)
    return ship
