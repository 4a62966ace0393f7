"""How a worker's successes reach the database: chosen once, at start.

Three ways, one per shape of worker, each measured against the others
(docs/decisions.md): a success is written by the writer thread in batches
(``succeed_many``); a success that ends the last run going is held and
written with the loop's next claim (``succeed_and_claim``), one round trip
per job; and a worker with one slot in all writes it with the next claim from
the handler's own thread, which runs the job it gets (``Worker._carry_on``).
Which of these a worker uses depends on its slots alone: tracing and metrics
change nothing here (what they need comes in every claim's rows,
``instruments.observe_claimed``). The worker names its
route in its start-up line, and its heartbeat says it (``label``) to the
workers view.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum


class SuccessRoute(Enum):
    ONE_SLOT = "with the next claim, on the handler's thread (one slot)"
    BATCHED = "in writer batches, or with the next claim when the last run going ends"

    @classmethod
    def choose(cls, concurrency: Mapping[str, int]) -> SuccessRoute:
        """The route of a worker with these slots per queue."""
        return cls.ONE_SLOT if sum(concurrency.values()) == 1 else cls.BATCHED

    @property
    def label(self) -> str:
        """The route's short name, as the worker's heartbeat reports it
        (``workhorse_status``, the admin's Workers page): ``one_slot`` or ``batched``."""
        return self.name.lower()

    @property
    def carries_on(self) -> bool:
        """The handler's thread claims and starts the next job itself."""
        return self is SuccessRoute.ONE_SLOT
