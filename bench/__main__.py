"""``make bench``: print the figures the issues ask for.

    python -m bench [calibrate] [lifecycle] [core] [worker] [drain] [pickup] [ratio] [observed]
                    [control] [deps] [durable] [peers] [claimcommit] [admin]
    python -m bench enqueue-single [--single-turns 30]
                    [--history N] [--admin-jobs N]
    python -m bench drain pickup oneslot --against COMMIT
    python -m bench sustained [--sustained-minutes 6] | growth | storage [--storage-jobs N]
    python -m bench fleet [--processes 2,6,12,24] [--jobs 200000] [--pool 20]
                          [--limited both|with|without] [--fleet-rounds 1]
    python -m bench idle [--idle-workers 24] [--idle-seconds 60] [--idle-settle 20]
                         [--idle-queues default] [--idle-baseline 20]

With no section named it runs ``core``, ``worker``, ``observed``, ``control``, ``deps``,
``durable`` and ``peers`` (``core`` starts with the calibration). ``drain``, ``pickup`` and
``ratio`` (the
history ratio) run one part of ``worker`` alone; ``lifecycle`` runs the
calibration and the SQL lifecycle of ``core`` alone; ``observed`` compares the
drain with tracing and metrics on to the plain drain, in ``--rounds`` turns; ``control``
(bench/control.py) compares drains of queues with limits that never bind to
the plain drain, in turns, and measures the latency of cancelling a running
job; ``peers`` runs pgqueuer side
by side with ours, from a virtualenv of its own, and is skipped with a note
when that cannot be set up (no network). ``admin`` (the operator's pages and
retention at ``--admin-jobs`` jobs, see bench/admin.py) runs only when named.
``deps`` measures the release time of a 10,000-job fan-in and fan-out
(bench/deps.py); it runs with the default sections and alone.

Runs against its own database (``workhorse_bench``, or ``WORKHORSE_BENCH_DB``,
on the server of DATABASE_URL), which it drops and creates afresh.
``--against COMMIT`` runs the drain, the pickup and the one-slot drain of this
tree and of COMMIT in turns (bench/against.py). ``claimcommit`` measures a claim's latency with
and without waiting for its WAL flush, in turns. ``durable`` measures
checkpoint writes, a drain of jobs that sleep once against the plain drain,
and where checkpoints are loaded (bench/durable.py). ``sustained`` (a fixed-rate
producer and two workers for minutes on a server of its own, autovacuum on
then off, bench/sustained.py), ``growth`` (single enqueue per 100,000-row
block as the job table grows to 1,000,000 with statistics taken empty,
bench/growth.py) and ``storage`` (bytes of 1,000,000 finished jobs after
VACUUM, bench/storage.py) run only when named; ``oneslot`` (runworker's one
slot against two bare transactions per row, bench/oneslot.py) too.
``fleet`` (bench/fleet.py) runs only when named: worker processes as on
separate machines, through PgBouncer with a pool of ``--pool`` server
connections, drain ``--jobs`` no-op jobs, a third of them SIGKILLed midway, on
a server of its own; ``--processes`` gives the process counts. Each count
gets a drain with the limited queue ``fleet-limited`` among the queues the
whole fleet serves and one without it (``--limited both``, the default; or
``with`` or ``without`` alone), ``--fleet-rounds`` pairs of them, the first of
each pair alternating; it ends with the curve (claim p99, server CPU per job,
stalls of live processes, limits held, per run) and the with/without ratio
of jobs/s per process count.
``idle`` (bench/idle.py, only when named) starts ``--idle-workers`` idle
``runworker --queues <--idle-queues>`` processes with the default settings
on a server of its own,
lets them settle ``--idle-settle`` seconds, and measures ``--idle-seconds``:
the database's transactions per second, broken down by the ``workhorse_*``
function that sends them, and the server CPU per second, per worker and
for 1,000 idle workers against issue 33's targets.
``peers-enqueue`` runs the enqueue half of ``peers`` alone (single and bulk,
ours and pgqueuer's, in turns). ``enqueue-single`` runs its first part alone
(bench/peers.py ``single_in_turns``): ``--single-turns`` turns (default 30) of
200 single enqueues of ours, of pgqueuer's and of a bare one-row INSERT commit
(through Django's cursor and through its psycopg connection), with each one's
client CPU per call, the per-turn ratio of our rate to pgqueuer's and our CPU
over the bare INSERT's. ``enqueue`` runs the enqueue figures of ``core`` alone: one job per
transaction against a bare one-row INSERT commit, in turns, and batches of
1,000. ``pickup-pgbouncer`` (bench/pgbouncer.py, only when named) compares the
pickup of a worker behind PgBouncer in transaction mode, woken through its
direct LISTEN connection, with a direct worker's, in turns (``--rounds``).
``ceiling`` (bench/ceiling.py, only when named) drains with one process and
counts the server CPU of its backends per job: the jobs/s one core carries.
"""

from __future__ import annotations

import argparse

from .common import raw_connection, setup_django


def fleet_processes(text: str) -> list[int]:
    from .fleet import parse_processes

    return parse_processes(text)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected more than 0 seconds, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected 0 seconds or more, got {text!r}")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument(
        "sections",
        nargs="*",
        default=None,
        choices=[
            "calibrate",
            "lifecycle",
            "core",
            "enqueue",
            "worker",
            "drain",
            "pickup",
            "ratio",
            "observed",
            "control",
            "peers",
            "peers-enqueue",
            "enqueue-single",
            "claimcommit",
            "admin",
            "deps",
            "durable",
            "sustained",
            "growth",
            "storage",
            "oneslot",
            "fleet",
            "idle",
            "pickup-pgbouncer",
            "ceiling",
        ],
    )
    parser.add_argument(
        "--history",
        type=int,
        default=1_000_000,
        help="terminal jobs to put in history for the ratio runs",
    )
    parser.add_argument(
        "--admin-jobs",
        type=int,
        default=1_000_000,
        help="jobs in the database for the admin section (then three times as many)",
    )
    parser.add_argument(
        "--admin-parts",
        type=lambda text: text.split(","),
        default=["hour", "growth", "action"],
        help="parts of the admin section, comma-separated: hour (N jobs finished in the"
        " last hour, then none), growth (N jobs, then 3N over 30 days, and retention),"
        " action (confirming cancel all over the N/10 live jobs, and the action's rate)",
    )
    parser.add_argument(
        "--sustained-minutes",
        type=int,
        default=6,
        help="minutes of each sustained-load run (autovacuum on, then off)",
    )
    parser.add_argument(
        "--storage-jobs",
        type=int,
        default=1_000_000,
        help="finished jobs whose size the storage section measures",
    )
    parser.add_argument(
        "--processes",
        type=fleet_processes,
        default=[24],
        help="fleet: worker process counts, one drain each, e.g. 2,6,12,24 (default 24)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=200_000,
        help="fleet: no-op jobs each drain takes (default 200,000; 20,000 to try it quickly)",
    )
    parser.add_argument(
        "--pool",
        type=int,
        default=20,
        help="fleet: PgBouncer's pool, the most server connections the fleet gets (default 20)",
    )
    parser.add_argument(
        "--fleet-concurrency",
        type=int,
        default=20,
        help="fleet: --concurrency of each worker process (default 20)",
    )
    parser.add_argument(
        "--limited",
        choices=["both", "with", "without"],
        default="both",
        help="fleet: drains with fleet-limited among the served queues, without it, or both"
        " in turns (default both, with the ratio of their jobs/s)",
    )
    parser.add_argument(
        "--fleet-rounds",
        type=positive_int,
        default=1,
        help="fleet: drains of each --limited variant per process count (default 1)",
    )
    parser.add_argument(
        "--idle-workers",
        type=positive_int,
        default=24,
        help="idle: runworker processes of the idle fleet (default 24)",
    )
    parser.add_argument(
        "--idle-seconds",
        type=positive_float,
        default=60.0,
        help="idle: seconds of the measured window (default 60)",
    )
    parser.add_argument(
        "--idle-settle",
        type=positive_float,
        default=20.0,
        help="idle: seconds between the fleet's readiness and the window (default 20)",
    )
    parser.add_argument(
        "--idle-baseline",
        type=non_negative_float,
        default=20.0,
        help="idle: seconds the server is measured with no worker first (default 20; 0: none)",
    )
    parser.add_argument(
        "--idle-queues",
        default="default",
        help="idle: the --queues of each idle worker (default: default)",
    )
    parser.add_argument(
        "--against",
        metavar="COMMIT",
        help="run drain, pickup and/or oneslot in turns with COMMIT's code (bench/against.py)",
    )
    parser.add_argument(
        "--single-turns",
        type=int,
        default=30,
        help="enqueue-single (and peers, peers-enqueue): turns of 200 single enqueues a side",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="with --against, for pickup-pgbouncer and for observed: rounds of each side"
        " (each mode), taken in turns",
    )
    args = parser.parse_args()
    # A list default is checked against the choices as a whole; name it here.
    args.sections = args.sections or [
        "core",
        "worker",
        "observed",
        "control",
        "deps",
        "durable",
        "peers",
    ]
    url = setup_django()
    conn = raw_connection()
    print(f"benchmark database: {url}")
    print("server:", conn.execute("SELECT version()").fetchone()[0])
    print(
        "fsync:",
        conn.execute("SHOW fsync").fetchone()[0],
        " synchronous_commit:",
        conn.execute("SHOW synchronous_commit").fetchone()[0],
    )
    if args.against:
        from . import against

        wanted = [s for s in args.sections if s in ("drain", "pickup", "oneslot")]
        if not wanted or wanted != args.sections:
            parser.error(
                "--against compares the drain, the pickup and the one-slot drain only: "
                "name drain, pickup, oneslot or several"
            )
        against.run(conn, url, args.against, wanted, rounds=args.rounds)
        return
    if "core" not in args.sections and (
        "calibrate" in args.sections or "lifecycle" in args.sections
    ):
        from . import core

        rates = core.calibrate(conn)
        if "lifecycle" in args.sections:
            core.sql_lifecycle(conn, rates["claim_delete"])
    if "core" in args.sections:
        from . import core

        core.run(conn, args.history)
    if "enqueue" in args.sections and "core" not in args.sections:
        from . import core

        section_title = "enqueue: one job per transaction and batches of 1,000"
        core.section(section_title)
        core.enqueue_single(conn)
        core.enqueue_batches(conn)
    if args.sections == ["drain"]:
        from . import common, worker

        common.reset(conn)
        worker.drains(conn, url, 20_000, "empty history")
    if args.sections == ["claimcommit"]:
        from . import core

        core.claim_commit_cost(conn)
    if args.sections == ["pickup"]:
        from . import worker

        worker.pickup(conn, url)
    if "ceiling" in args.sections:
        from . import ceiling

        ceiling.run(conn, url)
    if "pickup-pgbouncer" in args.sections:
        from . import common, pgbouncer

        common.reset(conn)
        pgbouncer.run(conn, url, args.rounds)
    if args.sections == ["ratio"]:
        from . import worker

        worker.history_ratio(conn, url, args.history, 20_000)
    if "observed" in args.sections:
        from . import common, observed

        common.reset(conn)
        observed.run(conn, url, turns=args.rounds)
    if "control" in args.sections:
        from . import common, control

        common.reset(conn)
        control.run(conn, url)
    if "worker" in args.sections:
        from . import worker

        worker.run(conn, url, args.history)
    if "deps" in args.sections:
        from . import deps

        deps.run(conn)
    if "durable" in args.sections:
        from . import common, durable

        common.reset(conn)
        durable.run(conn, url)
    if "admin" in args.sections:
        from . import admin

        if "hour" in args.admin_parts:
            admin.run_hour(conn, args.admin_jobs)
        if "growth" in args.admin_parts:
            admin.run(conn, args.admin_jobs)
        if "action" in args.admin_parts:
            admin.run_action(conn, args.admin_jobs)
    if "sustained" in args.sections:
        from . import sustained

        sustained.run(args.sustained_minutes)
    if "oneslot" in args.sections:
        from . import oneslot

        oneslot.run(conn, url)
    if "growth" in args.sections:
        from . import growth

        growth.run(conn)
    if "storage" in args.sections:
        from . import storage

        storage.run(conn, args.storage_jobs)
    if "fleet" in args.sections:
        from . import fleet

        fleet.run(
            args.processes,
            args.jobs,
            args.pool,
            args.fleet_concurrency,
            limited=args.limited,
            rounds=args.fleet_rounds,
        )
    if "idle" in args.sections:
        from . import idle

        idle.run(
            args.idle_workers,
            args.idle_seconds,
            args.idle_settle,
            args.idle_queues,
            args.idle_baseline,
        )
    if {"peers", "peers-enqueue", "enqueue-single"} & set(args.sections):
        from . import peers

        try:
            peers.ensure_venv()
        except (OSError, RuntimeError) as exc:
            print(f"\n== peer section skipped: cannot set up pgqueuer's virtualenv ({exc})")
        else:
            peers.run(
                conn,
                url,
                enqueue_only="peers" not in args.sections,
                single_only=not {"peers", "peers-enqueue"} & set(args.sections),
                single_turns=args.single_turns,
            )


if __name__ == "__main__":
    main()
