"""``runworker --processes N``: N worker processes under one supervisor.

Each child is a plain ``runworker`` process (its own worker id, connections
and slots); the supervisor restarts a child that dies unexpectedly, forwards
SIGTERM/SIGINT to all children, and exits once they have all stopped.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

logger = logging.getLogger("django_workhorse.worker")

RESTART_DELAY = 1.0


class Supervisor:
    def __init__(self, argv: Sequence[str], processes: int) -> None:
        self.argv = list(argv)
        self.processes = processes
        self.children: list[subprocess.Popen | None] = [None] * processes
        self.stopping = False
        self.signals = 0

    def _spawn(self, index: int) -> None:
        self.children[index] = subprocess.Popen(self.argv)
        logger.info(
            "workhorse supervisor: started worker %s (pid %s)", index, self.children[index].pid
        )

    def _forward(self, signum, frame) -> None:
        self.stopping = True
        self.signals += 1
        for child in self.children:
            if child is not None and child.poll() is None:
                child.send_signal(signum)

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._forward)
        signal.signal(signal.SIGINT, self._forward)
        for index in range(self.processes):
            self._spawn(index)
        codes: dict[int, int] = {}
        while True:
            alive = False
            for index, child in enumerate(self.children):
                if child is None:
                    continue
                code = child.poll()
                if code is None:
                    alive = True
                    continue
                if self.stopping:
                    codes[index] = code
                    self.children[index] = None
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
        return max(codes.values(), default=0)


def child_argv(argv: Sequence[str]) -> list[str]:
    """The command line of a child: this one without ``--processes``."""
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
    return out
