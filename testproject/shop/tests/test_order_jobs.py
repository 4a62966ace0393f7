"""Testing an app's jobs the way a user would: enqueue, run them all in the
test process, and look at what happened."""

from __future__ import annotations

import pytest

from django_workhorse.testing import assert_enqueued, assert_not_enqueued, run_jobs
from shop.jobs import charge_card, fulfil, place_order, reserve_stock, send_receipt
from shop.tasks import notify_warehouse


@pytest.mark.django_db
def test_placing_an_order_runs_the_whole_graph():
    handle = place_order.enqueue(order_id=7, amount=250)

    report = run_jobs()

    assert report.names()[:3] == [
        "shop.jobs.place_order",
        "shop.jobs.charge_card",
        "shop.jobs.reserve_stock",
    ]
    assert sorted(report.names()[3:]) == [
        "shop.jobs.send_receipt",  # due in an hour: brought forward
        "shop.tasks.notify_warehouse",
    ]
    assert handle.refresh().status == "succeeded"
    receipt = assert_enqueued(send_receipt, order_id=7)
    assert receipt.refresh().result == "receipt for order 7"
    assert (
        notify_warehouse.get_result(
            str(assert_enqueued(notify_warehouse, args=[7]).id)
        ).return_value
        == "warehouse told about order 7"
    )


@pytest.mark.django_db
def test_a_retry_runs_again_without_waiting_for_its_backoff():
    place_order.enqueue(order_id=8, amount=5000)

    report = run_jobs(names=[place_order, charge_card])

    charges = [r for r in report if r.name == "shop.jobs.charge_card"]
    assert [(r.attempt, r.ok, r.will_retry) for r in charges] == [
        (1, False, True),
        (2, True, False),
    ]
    assert isinstance(charges[0].error, ConnectionError)
    # only the named jobs ran: the others wait for their turn
    assert assert_enqueued(reserve_stock, order_id=8).refresh().status == "ready"


@pytest.mark.django_db
def test_a_declined_card_ends_failed_after_its_last_attempt():
    handle = charge_card.enqueue(order_id=9, amount=0)

    report = run_jobs()

    assert [r.attempt for r in report.failed] == [1, 2, 3]
    handle.refresh()
    assert (handle.status, handle.attempts) == ("failed", 3)
    assert handle.error["type"] == "shop.jobs.CardDeclined"
    assert_not_enqueued(send_receipt, order_id=9)


@pytest.mark.django_db
def test_raise_errors_surfaces_the_handlers_exception():
    charge_card.enqueue(order_id=10, amount=0)
    with pytest.raises(Exception, match="nothing to charge"):
        run_jobs(raise_errors=True)


@pytest.mark.django_db
def test_without_skip_waits_only_due_jobs_run():
    send_receipt.options(delay=3600).enqueue(order_id=11)
    assert run_jobs(skip_waits=False).runs == []
    assert run_jobs().names() == ["shop.jobs.send_receipt"]


@pytest.mark.django_db(transaction=True)
def test_the_fixture_works_in_a_transactional_test(workhorse_jobs):
    place_order.enqueue(order_id=12, amount=10)
    assert len(workhorse_jobs.run()) == 5
    workhorse_jobs.assert_enqueued(charge_card, order_id=12, amount=10)
    with pytest.raises(AssertionError, match=r"no shop\.jobs\.charge_card job"):
        workhorse_jobs.assert_enqueued(charge_card, order_id=13)


@pytest.mark.django_db
def test_a_fulfilment_graph_ships_only_after_the_charge_and_the_packing():
    ship = fulfil(order_id=14, amount=250)
    assert ship.refresh().status == "blocked"

    report = run_jobs()

    names = report.names()
    assert names.index("shop.jobs.ship_parcel") > names.index("shop.jobs.charge_card")
    assert names.index("shop.jobs.ship_parcel") > names.index("shop.jobs.pack_parcel")
    assert names.index("shop.tasks.notify_warehouse") > names.index("shop.jobs.ship_parcel")
    assert ship.refresh().result == {"order_id": 14, "charged": 250}


@pytest.mark.django_db
def test_a_declined_card_cancels_the_shipment_and_the_warehouse_note():
    ship = fulfil(order_id=15, amount=0)

    report = run_jobs()

    assert "shop.jobs.ship_parcel" not in report.names()
    ship.refresh()
    assert ship.status == "canceled"
    charge = assert_enqueued(charge_card, order_id=15, amount=0)
    assert (ship.error["prerequisite"], ship.error["prerequisite_state"]) == (charge.id, "failed")
    note = notify_warehouse.get_result(str(assert_enqueued(notify_warehouse, args=[15]).id))
    assert note.status == "FAILED"
