"""Hard faults: PostgreSQL restarts under the workers, and their sessions are killed.

The test starts a PostgreSQL server of its own (the embedded one that
``scripts/with_database.py`` uses), never the shared server, migrates it, fills
it with jobs and runs two ``runworker`` processes against it. Meanwhile it
restarts the server (``pg_ctl -m fast`` and ``-m immediate``, a crash) and
terminates random worker sessions with ``pg_terminate_backend``. The workers
reconnect with backoff and never exit; at the end every job has exactly one
outcome, succeeded, and nothing is lost. Handlers may have run twice (a
claim lost in the crash, a result cut off): at-least-once, counted and printed.

``WORKHORSE_SOAK_ROUNDS`` sets the number of fault actions beyond the three
every run does (one of each kind); ``make soak`` runs many.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from tests.acceptance.conftest import TESTPROJECT

pytestmark = [
    pytest.mark.soak,
    pytest.mark.django_db(transaction=True, available_apps=["django_workhorse", "jobtests"]),
]

EXTRA_ROUNDS = max(0, int(os.environ.get("WORKHORSE_SOAK_ROUNDS", "6")) - 6)
JOBS = 150 + 30 * EXTRA_ROUNDS
FLAGS = ("--queues", "jobtests.sleep", "--concurrency", "4")
SETTINGS = {
    "LOCK_DURATION": 3,
    "LOCK_RENEW_INTERVAL": 0.5,
    "STALLED_INTERVAL": 0.5,
    "SHUTDOWN_GRACE": 1,
    "POLL_INTERVAL": 1,
}


def load_embedded_server():
    path = Path(__file__).resolve().parents[2] / "scripts" / "with_database.py"
    spec = importlib.util.spec_from_file_location("with_database", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EmbeddedServer


@pytest.fixture
def own_server():
    """A throwaway PostgreSQL with the project migrated into it: (server, url)."""
    server = load_embedded_server()()
    try:
        url = server.start()
        with psycopg.connect(
            host="127.0.0.1", port=server.port, user="postgres", dbname="postgres", autocommit=True
        ) as conn:
            conn.execute("CREATE DATABASE workhorse")
        migrate = subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v", "0"],
            cwd=TESTPROJECT,
            env={
                **os.environ,
                "DATABASE_URL": url,
                "DJANGO_SETTINGS_MODULE": "testproject.settings",
            },
            capture_output=True,
            text=True,
        )
        assert migrate.returncode == 0, migrate.stderr
        yield server, url
    finally:
        server.stop()


def restart(server, mode: str) -> None:
    """Stop the server with ``-m mode`` and start it again on the same port."""
    data = server.base / "data"
    server.pg.pg_ctl(["-w", "-t", "60", "-m", mode, "stop"], pgdata=data, **server._run_as())
    log = str(server.base / "server.log")
    start = ["-w", "-t", "60", "-l", log, "-o", f"-p {server.port}", "start"]
    server.pg.pg_ctl(start, pgdata=data, **server._run_as())


def terminate_a_worker_session(conn: psycopg.Connection, rng: random.Random) -> int:
    rows = conn.execute(
        "SELECT pid FROM pg_stat_activity"
        " WHERE datname = 'workhorse' AND application_name LIKE 'workhorse-%'"
    ).fetchall()
    if not rows:
        return 0
    pid = rng.choice(rows)[0]
    return int(conn.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone()[0])


def db(server) -> psycopg.Connection:
    return psycopg.connect(
        host="127.0.0.1", port=server.port, user="postgres", dbname="workhorse", autocommit=True
    )


def poll(predicate, timeout: float, what: str, workers) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except psycopg.OperationalError:
            pass  # the server is coming back
        if time.monotonic() > deadline:
            report = "\n".join(f"--- {w.name}:\n{w.tail(60)}" for w in workers)
            pytest.fail(f"not within {timeout} s: {what}\n{report}", pytrace=False)
        time.sleep(0.2)


def test_jobs_survive_postgresql_restarts_and_killed_sessions(own_server, start_worker):
    server, url = own_server
    seed = int(os.environ.get("WORKHORSE_SOAK_SEED", time.time_ns() % 1_000_000))
    rng = random.Random(seed)
    actions = ["restart fast", "restart immediate", "terminate"]
    actions += [rng.choice(actions) for _ in range(EXTRA_ROUNDS)]
    rng.shuffle(actions)
    print(f"hard-fault seed {seed} (WORKHORSE_SOAK_SEED={seed} replays it): {actions}")
    jobs = [
        {
            "name": "jobtests.jobs.sleep",
            "queue": "jobtests.sleep",
            "payload": {"seconds": 0.05, "label": str(i)},
            "max_stalled": 1000,
        }
        for i in range(JOBS)
    ]
    with db(server) as conn:
        conn.execute("SELECT workhorse_enqueue_many_v1(%s::jsonb)", [json.dumps(jobs)])

    workers = [
        start_worker(*FLAGS, name=f"w{i}", settings=SETTINGS, env={"DATABASE_URL": url})
        for i in range(2)
    ]
    counts = {"restart fast": 0, "restart immediate": 0, "terminate": 0}

    def outcomes() -> int:
        with db(server) as conn:
            return conn.execute("SELECT count(*) FROM workhorse_job_outcome").fetchone()[0]

    for action in actions:
        time.sleep(rng.uniform(0.5, 1.5))
        if action == "terminate":
            with db(server) as conn:
                counts[action] += terminate_a_worker_session(conn, rng)
        else:
            restart(server, action.split()[1])
            counts[action] += 1
            # Let the workers find the server again before the next fault.
            before = outcomes()
            poll(lambda b=before: outcomes() > b or outcomes() == JOBS, 120, "progress", workers)
        for worker in workers:
            assert worker.alive(), f"{worker.name} exited after {action}:\n{worker.tail(60)}"

    poll(lambda: outcomes() == JOBS, 300, f"all {JOBS} jobs terminal after {actions}", workers)
    for worker in workers:
        assert worker.alive(), worker.tail(60)
        assert worker.stop(timeout=30) == 0, worker.tail(60)
        assert "Traceback" not in worker.stderr, worker.stderr

    with db(server) as conn:
        states = dict(
            conn.execute(
                "SELECT state, count(*) FROM workhorse_job_outcome GROUP BY state"
            ).fetchall()
        )
        live = conn.execute("SELECT count(*) FROM workhorse_job_runtime").fetchone()[0]
        successes = conn.execute(
            "SELECT count(*), count(DISTINCT job_id) FROM workhorse_attempt_history"
            " WHERE outcome = 'succeeded'"
        ).fetchone()
        runs, ran = conn.execute(
            "SELECT count(*), count(DISTINCT job_id) FROM jobtests_runrecord"
        ).fetchone()
    restarts = counts["restart fast"] + counts["restart immediate"]
    for worker in workers:
        # The claim loop says so once per outage, and once when it is over.
        lost = worker.stderr.count("workhorse: cannot reconnect")
        assert lost <= restarts, worker.stderr
        # (the stop at the end may interrupt a wait that outlasted the outage)
        back = worker.stderr.count("workhorse: reconnected after")
        assert back in (lost, lost - 1), worker.stderr
    reconnects = sum(w.stderr.count("workhorse: cannot reconnect") for w in workers)
    print(
        f"hard faults: jobs {JOBS}, restarts fast {counts['restart fast']}, "
        f"restarts immediate {counts['restart immediate']}, sessions killed "
        f"{counts['terminate']}, duplicate handler runs {runs - ran}, "
        f"outages the claim loops reported {reconnects}"
    )
    assert states == {"succeeded": JOBS}, (seed, actions)
    assert live == 0
    assert successes == (JOBS, JOBS)  # exactly one recorded success per job
    assert ran == JOBS  # every handler ran at least once
