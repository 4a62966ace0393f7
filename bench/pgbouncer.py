"""Pickup through PgBouncer with a direct LISTEN connection, against direct, in turns.

``python -m bench pickup-pgbouncer [--rounds N]`` starts Debian's pgbouncer
(scripts/pgbouncer.py: transaction mode, a pool of ``POOL_SIZE`` server
connections) in front of the benchmark database, and alternates blocks of
pickup samples (enqueue commit -> handler start, one job at a time to an
idle one-slot worker, ``POLL_INTERVAL`` 60 s so that only a NOTIFY wakes it)
of two workers of this tree: one whose database is the server itself, and
one whose database is PgBouncer and whose ``LISTEN_DATABASE`` is the
server. The order is swapped every round, so that both meet the same load.
The target: the pooled worker's pickup within 10 % of the direct one's.
"""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import psycopg

from .against import PICKUP_BLOCK, Side, load, pickup_block
from .common import ROOT, median, percentile, report, section

POOL_SIZE = 4


def _pgbouncer_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "workhorse_pgbouncer_script", ROOT / "scripts" / "pgbouncer.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class PooledSide(Side):
    """This tree's worker behind PgBouncer, listening on the server directly."""

    def __init__(self, label: str, pooled_url: str, direct_url: str, conn: Any) -> None:
        super().__init__(label, ROOT, pooled_url, conn)
        self.direct_url = direct_url

    def env(self, **settings: object) -> dict[str, str]:
        env = super().env(**settings)
        env["WORKHORSE_JSON"] = json.dumps({**settings, "LISTEN_DATABASE": "direct"})
        env["DIRECT_DATABASE_URL"] = self.direct_url
        env["DATABASE_POOLED"] = "1"
        return env


def run(conn: psycopg.Connection, url: str, rounds: int) -> None:
    section(
        f"pickup through PgBouncer (transaction mode, pool of {POOL_SIZE}) with the direct "
        f"LISTEN connection, against direct, in turns ({load()})"
    )
    with _pgbouncer_module().PgBouncer(url, pool_size=POOL_SIZE) as bouncer:
        name = url.rsplit("/", 1)[1]
        sides = [
            Side("direct", ROOT, url, conn),
            PooledSide("through PgBouncer", bouncer.url_for(name), url, conn),
        ]
        latencies: dict[str, list[float]] = {side.label: [] for side in sides}
        medians: dict[str, list[float]] = {side.label: [] for side in sides}
        for turn in range(rounds):
            for side in sides if turn % 2 == 0 else sides[::-1]:
                block = pickup_block(side, PICKUP_BLOCK)
                latencies[side.label] += block
                medians[side.label].append(percentile(block, 50))
    for pct in (50, 95, 99):
        for side in sides:
            report(
                f"pickup p{pct}: {side.label}",
                percentile(latencies[side.label], pct),
                "ms",
                f"{rounds} blocks of {PICKUP_BLOCK} in turns",
            )
    direct, pooled = (median(medians[side.label]) for side in sides)
    report(
        "pickup p50 through PgBouncer / direct (median of the blocks)",
        pooled / direct,
        "x",
        "target <= 1.10",
    )
    print(f"  ({load()})", flush=True)
