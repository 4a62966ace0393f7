"""The ``--processes`` supervisor forwards each SIGTERM/SIGINT to every child
once, also one that arrives while a child is being started.

The children are stand-ins for ``subprocess.Popen``; the real processes are
``tests/acceptance/test_processes.py``'s."""

from __future__ import annotations

import signal

import pytest

from django_workhorse.worker import supervisor as supervisor_module
from django_workhorse.worker.supervisor import Supervisor

POLLS_WITHOUT_A_SIGNAL = 200
"""A child polled this often without being told to stop never will be."""


class FakeChild:
    """A child that runs until it gets a signal, then exits 0 a few polls
    later (a worker takes a moment to stop)."""

    started: list[FakeChild] = []
    on_start: list = []

    exit_code = 0
    """What every child exits with once told to stop (-9: killed by SIGKILL)."""

    def __init__(self, argv, **kwargs) -> None:
        self.pid = 1000 + len(FakeChild.started)
        self.signals: list[int] = []
        self.polls = 0
        self.exit_after = 0
        FakeChild.started.append(self)
        for hook in FakeChild.on_start:
            hook()  # as a signal handler that runs while Popen is under way

    def poll(self) -> int | None:
        self.polls += 1
        if self.signals and self.polls > self.exit_after:
            return FakeChild.exit_code
        assert self.polls < POLLS_WITHOUT_A_SIGNAL, f"child {self.pid} never heard of the stop"
        return None

    def send_signal(self, signum: int) -> None:
        if not self.signals:
            self.exit_after = self.polls + 3
        self.signals.append(signum)


@pytest.fixture
def fake_children(monkeypatch):
    monkeypatch.setattr(supervisor_module.subprocess, "Popen", FakeChild)
    monkeypatch.setattr(FakeChild, "started", [])
    monkeypatch.setattr(FakeChild, "on_start", [])
    monkeypatch.setattr(FakeChild, "exit_code", 0)
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    yield FakeChild
    for signum, handler in handlers.items():
        signal.signal(signum, handler)


def test_a_sigterm_that_arrives_while_a_child_starts_reaches_every_child_once(fake_children):
    fleet = Supervisor(["runworker"], 3)
    fake_children.on_start.append(
        lambda: len(fake_children.started) == 1 and fleet._note_signal(signal.SIGTERM, None)
    )

    assert fleet.run() == 0

    assert fake_children.started, "no child was started"
    assert [child.signals for child in fake_children.started] == [[signal.SIGTERM]] * len(
        fake_children.started
    )


def test_two_signals_reach_every_running_child_once_each(fake_children):
    fleet = Supervisor(["runworker"], 2)

    def two_signals() -> None:
        if len(fake_children.started) == 2:
            fleet._note_signal(signal.SIGTERM, None)
            fleet._note_signal(signal.SIGTERM, None)

    fake_children.on_start.append(two_signals)

    assert fleet.run() == 0
    assert [child.signals for child in fake_children.started] == [[signal.SIGTERM] * 2] * 2


def test_a_child_killed_by_a_signal_during_the_stop_makes_the_supervisor_exit_non_zero(
    fake_children,
):
    fleet = Supervisor(["runworker"], 2)
    fake_children.exit_code = -signal.SIGKILL  # as Popen reports a child killed by SIGKILL
    fake_children.on_start.append(
        lambda: len(fake_children.started) == 2 and fleet._note_signal(signal.SIGTERM, None)
    )

    assert fleet.run() == 128 + signal.SIGKILL  # as a shell reports it
