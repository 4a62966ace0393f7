"""The worker's liveness: what lets stall recovery tell a worker that waits
from one that is gone, and what the worker does when it cannot tell itself.

A lease alone cannot tell them apart. A renewal may wait (behind the
worker's own writer on the shared lease connection, behind a lock an
application, an operator or a migration holds, in a full PgBouncer pool)
for longer than the lease, and then the job of a worker that is alive and
well looks exactly like the job of a dead one. So each worker also proves
itself alive on its direct LISTEN connection, every half of
``LOCK_DURATION``: ``workhorse_pulse_v1`` sets that connection's application
name to the time until which the worker counts as alive. Setting it reads
and locks nothing and passes no pooler, and PostgreSQL drops it with the
session. Stall recovery takes a job only when its lease has run out *and*
its worker's proof has (``workhorse_recover_stalled_v1``, migration 0002).

The other half is here. A worker that cannot prove itself (its database
unreachable, its direct connection lost, no direct connection at all
behind a pooler, so that only the renewals prove anything) must stop
owning its runs before anyone else may take them. ``Liveness`` reckons,
per run, the latest moment its ownership is proven for: the later of its
claim, its last renewal and the last pulse, each as sent (so never later
than the database's own reckoning), plus ``LOCK_DURATION``, less a margin.
A run past that moment is stopped (``Worker._check_liveness``): its handler
is told (``LeaseLost`` at its next checkpoint, sleep or
``raise_if_canceled()``; an async handler is cancelled), its failure is not
written, its success only under its fence, and once the worker reaches the
database again the job is released back to ready if nobody took it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

MARGIN_SHARE = 0.1
"""The margin before the database's reckoning: a tenth of the lease..."""
MARGIN_MAX = 2.0
"""...and at most this many seconds."""


class Liveness(threading.Thread):
    """Checks, every ``interval``, for runs whose ownership is no longer
    proven; ``on_unproven(before)`` gets the cut-off (monotonic): runs proven
    only for earlier than it must stop."""

    def __init__(self, lease_seconds: float, on_unproven: Callable[[float], None]) -> None:
        super().__init__(name="workhorse-liveness", daemon=True)
        self.lease_seconds = lease_seconds
        self.margin = min(MARGIN_MAX, lease_seconds * MARGIN_SHARE)
        self.interval = max(0.05, min(1.0, self.margin / 2))
        self.on_unproven = on_unproven
        self.pulsed = 0.0
        """When the last pulse that landed set out (monotonic); 0: none yet.
        Written by the listener's thread, read here: a float, one store."""
        self.leads = True
        """Whether the last pulse said this worker leads the fleet's sweeps."""
        self.stop_event = threading.Event()

    def proved(self, sent: float, leads: bool = True) -> None:
        """A pulse that set out at ``sent`` landed (the listener's thread),
        saying whether this worker leads the fleet's sweeps."""
        self.leads = leads
        if sent > self.pulsed:
            self.pulsed = sent

    def sweeps(self) -> bool:
        """Whether this worker does the fleet's sweeps now (stall recovery,
        schedules, vacuum): when its last pulse said it leads, and when it
        has no current pulse at all (a worker without a direct connection,
        or cut off from it, sweeps for itself as every worker once did)."""
        if self.pulsed < time.monotonic() - self.lease_seconds:
            return True
        return self.leads

    def cut_off(self, now: float) -> float:
        """Runs whose own proof (claim, renewal) set out before this moment
        are no longer proven owned, unless a pulse proves the whole worker."""
        before = now - self.lease_seconds + self.margin
        if self.pulsed >= before:
            return float("-inf")  # the worker's pulse proves every run
        return before

    def stop(self) -> None:
        self.stop_event.set()

    def run(self) -> None:
        while not self.stop_event.wait(self.interval):
            before = self.cut_off(time.monotonic())
            if before != float("-inf"):
                self.on_unproven(before)
