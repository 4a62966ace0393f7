"""``runworker --max-jobs N`` and ``--max-seconds S``: a worker that stops
claiming after N jobs or S seconds, finishes what it runs and exits 0, so
that a supervisor (systemd, Kubernetes, ``--processes``) starts a fresh
process, as Celery's ``max-tasks-per-child`` recycles a child."""

from __future__ import annotations

import time


class Recycle:
    """The claim loop's budget; every method is called under the claim lock."""

    def __init__(self, max_jobs: int | None, max_seconds: float | None) -> None:
        self.max_jobs = max_jobs
        self.max_seconds = max_seconds
        self.deadline = None if max_seconds is None else time.monotonic() + max_seconds
        """On the monotonic clock: the claim loop's idle wait ends by then."""
        self.taken = 0

    def room(self) -> int:
        """How many more jobs may be claimed (a large number without a cap)."""
        if self.max_jobs is None:
            return 1 << 30
        return max(0, self.max_jobs - self.taken)

    def limit(self, free: dict[str, int]) -> dict[str, int]:
        """``free`` slots cut down so that one claim cannot pass ``max_jobs``."""
        room = self.room()
        if self.max_jobs is None or sum(free.values()) <= room:
            return free
        out: dict[str, int] = {}
        for queue, slots in free.items():
            if room <= 0:
                break
            out[queue] = min(slots, room)
            room -= out[queue]
        return out

    def claimed(self, count: int) -> None:
        self.taken += count

    def due(self) -> bool:
        """Whether the worker should stop claiming now."""
        if self.max_jobs is not None and self.taken >= self.max_jobs:
            return True
        return self.deadline is not None and time.monotonic() >= self.deadline

    def reason(self) -> str:
        if self.max_jobs is not None and self.taken >= self.max_jobs:
            return f"--max-jobs {self.max_jobs}"
        return f"--max-seconds {self.max_seconds:g}"
