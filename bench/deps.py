"""Job dependencies: the release time of a 10,000-job fan-in and fan-out.

Both are measured on the SQL functions a worker's writer calls, so the
figures are the database's work alone:

* fan-out: one job with 10,000 dependents; the ``succeed_many`` of that one
  job releases all of them in its transaction. Reported: that call, next
  to the same call for a job nobody waits for.
* fan-in: one job depending on 10,000; they are claimed and succeeded in
  batches of 100 (as a writer does). Reported: the last batch, which
  releases the dependent, and the whole 10,000 against the same batches
  with no dependent (the price of counting the dependent down 100 times).
"""

from __future__ import annotations

import time

from .common import median, report, reset, section

N = 10_000
BATCH = 100
ROUNDS = 5


def _enqueue(conn, definition, payloads: int, **options) -> list[int]:
    from django_workhorse import store

    ids: list[int] = []
    bound = definition.options(**options)
    for start in range(0, payloads, 1000):
        rows_json, _ = bound._rows_json([{}] * min(1000, payloads - start))
        with conn.cursor() as cursor:
            ids += [job_id for job_id, _ in store.enqueue_many(cursor, rows_json)]
    return ids


def _claim_all(conn, queue: str, count: int) -> list[tuple[int, int]]:
    from django_workhorse import store

    tickets: list[tuple[int, int]] = []
    with conn.cursor() as cursor:
        while len(tickets) < count:
            claimed = store.claim_many(cursor, "bench-deps", [queue], [BATCH], 600)
            if not claimed:
                break
            tickets += [(c.job_id, c.fence) for c in claimed]
    return tickets


def _succeed(conn, tickets: list[tuple[int, int]]) -> float:
    """Seconds of one succeed_many of ``tickets``."""
    from django_workhorse import store

    with conn.cursor() as cursor:
        start = time.perf_counter()
        rows = store.succeed_many(
            cursor,
            "bench-deps",
            [t[0] for t in tickets],
            [t[1] for t in tickets],
            ["null"] * len(tickets),
        )
        seconds = time.perf_counter() - start
    assert all(ok for _, ok in rows), "a succeed was refused"
    return seconds


def _released(conn, ids: list[int]) -> int:
    return conn.execute(
        "SELECT count(*) FROM workhorse_job_runtime WHERE job_id = ANY(%s) AND state = 'ready'",
        [ids],
    ).fetchone()[0]


def fan_out(conn) -> tuple[float, float]:
    """(ms of the succeed that releases N dependents, ms of a plain one)."""
    from demo.jobs import noop

    reset(conn)
    (root,) = _enqueue(conn, noop, 1, queue="deps-root")
    dependents = _enqueue(conn, noop, N, queue="deps-leaves", depends_on=[root])
    _enqueue(conn, noop, 1, queue="deps-plain")
    conn.execute("VACUUM ANALYZE workhorse_job_runtime, workhorse_job_dependency")
    plain_seconds = _succeed(conn, _claim_all(conn, "deps-plain", 1))
    seconds = _succeed(conn, _claim_all(conn, "deps-root", 1))
    assert _released(conn, dependents) == N, "the fan-out did not release every dependent"
    return seconds * 1000, plain_seconds * 1000


def fan_in(conn, with_dependent: bool) -> tuple[float, float]:
    """(s for all N prerequisites' batches, ms of the last batch)."""
    from demo.jobs import noop

    reset(conn)
    prerequisites = _enqueue(conn, noop, N, queue="deps-fan-in")
    dependent = None
    if with_dependent:
        (dependent,) = _enqueue(conn, noop, 1, queue="deps-tip", depends_on=prerequisites)
    conn.execute("VACUUM ANALYZE workhorse_job_runtime, workhorse_job_dependency")
    tickets = sorted(_claim_all(conn, "deps-fan-in", N))
    assert len(tickets) == N
    times = [_succeed(conn, tickets[i : i + BATCH]) for i in range(0, N, BATCH)]
    if dependent is not None:
        assert _released(conn, [dependent]) == 1, "the fan-in did not release its dependent"
    return sum(times), times[-1] * 1000


def run(conn) -> None:
    section("job dependencies (issue: durable execution)")
    outs = [fan_out(conn) for _ in range(ROUNDS)]
    report(
        f"fan-out: succeed_many of 1 job releasing {N:,} dependents",
        median([o[0] for o in outs]),
        "ms",
        f"median of {ROUNDS}; runs {min(o[0] for o in outs):,.1f}-{max(o[0] for o in outs):,.1f}",
    )
    report(
        "  the same call for a job nobody waits for",
        median([o[1] for o in outs]),
        "ms",
        f"median of {ROUNDS}",
    )
    plain, tip = [], []
    for _ in range(ROUNDS):
        plain.append(fan_in(conn, with_dependent=False))
        tip.append(fan_in(conn, with_dependent=True))
    report(
        f"fan-in: the batch of {BATCH} that releases a job waiting for {N:,}",
        median([t[1] for t in tip]),
        "ms",
        f"median of {ROUNDS}; a plain batch: {median([p[1] for p in plain]):,.2f} ms",
    )
    report(
        f"fan-in: all {N // BATCH} batches of the {N:,} prerequisites",
        median([t[0] for t in tip]) * 1000,
        "ms",
        f"without the dependent: {median([p[0] for p in plain]) * 1000:,.1f} ms "
        f"(median of {ROUNDS} each, in turns)",
    )
