"""``runworker --processes N``: N worker processes under one supervisor.

Each child is a plain ``runworker`` process (its own worker id, connections
and slots). The supervisor:

- starts children in their own process group, so a Ctrl-C or a service
  manager's SIGTERM to the supervisor's group reaches each child once,
  forwarded, and counts as the first (graceful) signal;
- asks the kernel to SIGTERM a child whose supervisor dies (Linux), so no
  child outlives a SIGKILLed supervisor;
- starts a fresh child in place of one that ended its run with exit 0
  (``--max-jobs``, ``--max-seconds``);
- restarts a child that dies while running, and gives up (exit 1) when
  children keep dying within BOOT_WINDOW seconds of their start, which means
  they cannot start at all.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from ..operations import metrics

logger = logging.getLogger("django_workhorse.worker")

RESTART_DELAY = 1.0
BOOT_WINDOW = 10.0
"""A child that exits this soon after its start failed to boot."""
MAX_BOOT_FAILURES = 3

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM me when my parent dies (Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))


class Supervisor:
    def __init__(self, argv: Sequence[str], processes: int) -> None:
        self.argv = list(argv)
        self.processes = processes
        self.children: list[subprocess.Popen[bytes] | None] = [None] * processes
        self.started: list[float] = [0.0] * processes
        self.stopping = False
        self.boot_failures = 0
        self._received: list[int] = []
        """Signals received and not yet forwarded (the handler only notes them)."""
        self._forwarded: set[int] = set()

    def _spawn(self, index: int) -> None:
        child = subprocess.Popen(
            self.argv,
            process_group=0,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
        self.children[index] = child
        self.started[index] = time.monotonic()
        logger.info("workhorse supervisor: started worker %s (pid %s)", index, child.pid)

    def _note_signal(self, signum: int, frame: object) -> None:
        """SIGTERM/SIGINT: noted here, forwarded by the loop (``_forward``).

        The handler may run while a child is being started: a child whose
        start it interrupted would not be in ``children`` yet, and would
        never hear of the stop.
        """
        self.stopping = True
        self._received.append(signum)

    def _forward(self) -> None:
        """Send each signal received since the last call to every live child, once."""
        while self._received:
            signum = self._received.pop(0)
            self._forwarded.add(signum)
            for child in self.children:
                if child is not None and child.poll() is None:
                    child.send_signal(signum)

    def _stop_all(self) -> None:
        self.stopping = True
        for child in self.children:
            if child is not None and child.poll() is None:
                child.send_signal(signal.SIGTERM)

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._note_signal)
        signal.signal(signal.SIGINT, self._note_signal)
        for index in range(self.processes):
            if self.stopping:
                break
            self._spawn(index)
        codes: dict[int, int] = {}
        failed_to_boot = False
        while True:
            self._forward()
            alive = False
            for index, child in enumerate(self.children):
                if child is None:
                    continue
                code = child.poll()
                if code is None:
                    alive = True
                    continue
                metrics.child_exited(child.pid)
                if self.stopping:
                    # Killed by the very signal forwarded to stop it: it was
                    # still starting (a started worker handles the signal),
                    # had claimed nothing, and stopped as asked.
                    codes[index] = 0 if code < 0 and -code in self._forwarded else code
                    self.children[index] = None
                    continue
                if code == 0:
                    # Only --max-jobs / --max-seconds end a child with 0: it
                    # asks to be replaced by a fresh process, now.
                    logger.info(
                        "workhorse supervisor: worker %s (pid %s) finished its run; starting "
                        "a fresh one",
                        index,
                        child.pid,
                    )
                    self._spawn(index)
                    alive = True
                    continue
                quick = time.monotonic() - self.started[index] < BOOT_WINDOW
                self.boot_failures = self.boot_failures + 1 if quick else 0
                if self.boot_failures >= MAX_BOOT_FAILURES:
                    logger.error(
                        "workhorse supervisor: workers keep exiting right after they start "
                        "(last exit status %s); giving up, see their errors above",
                        code,
                    )
                    failed_to_boot = True
                    codes[index] = code
                    self.children[index] = None
                    self._stop_all()
                    continue
                logger.error(
                    "workhorse supervisor: worker %s (pid %s) exited with %s; restarting",
                    index,
                    child.pid,
                    code,
                )
                time.sleep(RESTART_DELAY)
                if not self.stopping:
                    self._spawn(index)
                    alive = True
            if not alive and self.stopping:
                break
            time.sleep(0.2)
        if failed_to_boot:
            return 1
        # A child killed by signal N (Popen says -N) counts as 128 + N, as a
        # shell reports it: a fleet whose child was killed does not exit 0.
        return max((code if code >= 0 else 128 - code for code in codes.values()), default=0)


def child_argv(argv: Sequence[str]) -> list[str]:
    """The command line of a child: this one, running one process.

    ``--processes`` is dropped and ``--processes 1`` appended: argparse also
    takes an abbreviation (``--proc 2``) that the dropping cannot know, and
    lets the last of a repeated flag win, so a child never becomes a
    supervisor of children of its own, however the flag was spelled.
    """
    out: list[str] = [sys.executable]
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "--processes":
            skip = True
            continue
        if arg.startswith("--processes="):
            continue
        out.append(arg)
    return [*out, "--processes", "1"]
