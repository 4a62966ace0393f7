"""The ledger holds a success that ends the last run going, for the claim loop
to write in its next claim's call; everything else goes to the writer."""

from __future__ import annotations

from datetime import UTC, datetime

from django_workhorse.context import JobContext
from django_workhorse.db.store import ClaimedJob
from django_workhorse.worker.execution import Finished, Running
from django_workhorse.worker.ledger import Ledger


def make_run(job_id: int, queue: str = "q") -> Running:
    job = ClaimedJob(job_id, "tests.job", queue, {}, 1, 1, 1, None, datetime.now(UTC), False)
    context = JobContext(job_id=job_id, name=job.name, queue=queue, attempt=1, max_attempts=1)
    return Running(job, None, context, owner="w")


def ledger(slots: int = 1) -> tuple[Ledger, list[Finished]]:
    handed: list[Finished] = []
    book = Ledger({"q": slots}, hand_over=handed.append)
    book.hold_successes(True)
    return book, handed


def test_the_success_of_the_last_run_going_is_held_not_handed_over():
    book, handed = ledger()
    run = make_run(1)
    book.start(run)

    book.finish(Finished(run, True, None))

    assert handed == []
    assert book.writing_count() == 1  # its lease is still renewed
    assert "q" in book.free_slots()  # the loop claims for its slot
    assert book.settled()  # the next claim writes it before it claims
    (held,) = book.take_held()
    assert held.running is run
    assert book.take_held() == []
    assert not book.settled()  # the loop's now, until written
    book.written([run])
    assert book.settled()


def test_a_success_while_other_runs_go_on_goes_to_the_writer():
    book, handed = ledger(slots=2)
    first, second = make_run(1), make_run(2)
    book.start(first)
    book.start(second)

    book.finish(Finished(first, True, None))
    book.finish(Finished(second, True, None))

    # The second ended the last run going, but the first still waits for the
    # writer: a claim carrying it would wait for a flush the writer makes.
    assert [item.running for item in handed] == [first, second]
    assert book.take_held() == []

    book.written([first, second])
    third = make_run(3)
    book.start(third)
    book.finish(Finished(third, True, None))
    assert [item.running for item in book.take_held()] == [third]


def test_a_failure_goes_to_the_writer():
    book, handed = ledger()
    run = make_run(1)
    book.start(run)

    book.finish(Finished(run, False, error=ValueError("boom")))

    assert [item.running for item in handed] == [run]
    assert book.take_held() == []


def test_nothing_is_held_unless_asked_and_turning_it_off_returns_what_was_held():
    handed: list[Finished] = []
    book = Ledger({"q": 1}, hand_over=handed.append)
    run = make_run(1)
    book.start(run)
    book.finish(Finished(run, True, None))
    assert [item.running for item in handed] == [run]
    book.written([run])

    book.hold_successes(True)
    later = make_run(2)
    book.start(later)
    book.finish(Finished(later, True, None))
    assert [item.running for item in book.hold_successes(False)] == [later]
    assert book.take_held() == []


def test_a_carried_on_success_keeps_its_slot_until_vacated():
    book, handed = ledger()
    run = make_run(1)
    book.start(run)

    assert book.carry_on(Finished(run, True, None))

    assert handed == [] and book.take_held() == []
    assert book.leases() == [("w", 1, 1)]  # still renewed while the call is made
    assert book.free_slots() == {}  # the loop sees no slot to claim for
    assert not book.settled()
    book.written([run])
    assert book.free_slots() == {}
    book.vacate(run)
    assert book.free_slots() == {"q": 1}
    assert book.settled()
    assert book.counts() == {"running": 0, "writing": 0, "holding": 0, "busy": 0}


def test_only_a_success_that_could_be_held_is_carried_on():
    book, _ = ledger(slots=2)
    first, second = make_run(1), make_run(2)
    book.start(first)
    book.start(second)
    # Another run is going: the loop claims for this slot, as before.
    assert not book.carry_on(Finished(first, True, None))
    book.finish(Finished(first, True, None))
    # A result waits for the writer.
    assert not book.carry_on(Finished(second, True, None))
    # A failure.
    book, handed = ledger()
    run = make_run(3)
    book.start(run)
    assert not book.carry_on(Finished(run, False, error=ValueError("boom")))
    # Held successes turned off (the worker stops).
    book.hold_successes(False)
    assert not book.carry_on(Finished(run, True, None))
    assert handed == [] and book.counts()["running"] == 1


def test_a_run_released_or_timed_out_is_not_carried_on():
    book, _ = ledger()
    run = make_run(1)
    book.start(run)
    assert book.release_all() == [run]
    assert not book.carry_on(Finished(run, True, None))

    book, _ = ledger()
    run = make_run(2)
    run.job.timeout = 1.0
    run.deadline = 0.0
    book.start(run)
    assert book.expire(1.0) == [run]
    assert not book.carry_on(Finished(run, True, None))
