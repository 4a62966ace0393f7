"""Work one worker does for the fleet (the schedule sweep, the vacuum turn)
is skipped, with no statement, while the worker does not lead the fleet's
sweeps (docs/worker.md#the-fleets-sweeps)."""

from __future__ import annotations

import threading

from django_workhorse.worker.liveness import Liveness
from django_workhorse.worker.periodic import PeriodicThread


class Counting(PeriodicThread):
    def __init__(self, duty) -> None:
        super().__init__("default", 0.01, name="counting", duty=duty)
        self.ticks = 0
        self.ticked = threading.Event()

    def tick_now(self) -> None:  # no database: count the turns taken
        self.ticks += 1
        self.ticked.set()


def test_a_turn_the_duty_says_no_to_is_skipped():
    allowed = threading.Event()
    thread = Counting(duty=allowed.is_set)
    thread.start()
    try:
        assert not thread.ticked.wait(0.2)
        allowed.set()
        assert thread.ticked.wait(5)
    finally:
        thread.stop()


def test_a_worker_sweeps_while_it_leads_or_has_no_current_pulse():
    import time

    liveness = Liveness(30.0, lambda before: None)
    assert liveness.sweeps()  # no pulse yet: it sweeps for itself
    liveness.proved(time.monotonic(), leads=False)
    assert not liveness.sweeps()
    liveness.proved(time.monotonic(), leads=True)
    assert liveness.sweeps()
    liveness.leads = False
    liveness.pulsed = time.monotonic() - 31.0  # its pulse ran out: it sweeps again
    assert liveness.sweeps()


def test_a_worker_whose_pulse_is_current_proves_every_run():
    import time

    liveness = Liveness(10.0, lambda before: None)
    now = time.monotonic()
    assert liveness.cut_off(now) == now - 10.0 + liveness.margin
    liveness.proved(now - 1.0)
    assert liveness.cut_off(now) == float("-inf")
