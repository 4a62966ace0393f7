"""Real ``runworker`` subprocesses for the acceptance tests.

``start_worker(*flags, settings={...})`` runs ``manage.py runworker`` against
the test database in a process group of its own (so ``--processes`` children
go with it) and returns a ``WorkerProcess``; ``settings`` become the worker's
``WORKHORSE`` through ``WORKHORSE_JSON``. Every test stops its workers itself
(``.stop()``, or waits for their exit); the ``workers`` fixture kills whatever
is still running at teardown and fails a test that passed but leaked one.

``wait_until(predicate, timeout=..., what=...)`` polls with a deadline and,
on failure, shows the stderr of every worker the test started.

``start_worker(..., through=pgbouncer)`` runs the worker as production
does, behind a real PgBouncer in transaction mode (the session fixture
``pgbouncer``: Debian's pgbouncer in front of the test database, a pool of
``PGBOUNCER_POOL_SIZE`` server connections): its ``DATABASES['default']``
(the worker's alias, and the handlers' ORM) is the pooler's URL, and
``DATABASES['direct']`` the server's own, for ``LISTEN_DATABASE``.

Every test here that touches the database is transactional (workers only
see committed rows), with
``available_apps=["django_workhorse", "jobtests"]`` so that the flush after
each test empties only the ``jobtests`` tables and skips re-creating content
types and permissions; the (unmanaged) workhorse tables are emptied by
``tests/conftest.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from tests.helpers import POOLED, direct_settings, poll_until

TESTPROJECT = Path(__file__).resolve().parents[2] / "testproject"
READY_RE = re.compile(r"workhorse worker (\S+) serving ")
"""The INFO line a worker logs once its slots, heartbeat and LISTEN are up."""


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    report = yield
    if report.when == "call":
        item.acceptance_call_failed = report.failed
    return report


FAST_COMMITS = {"options": "-c synchronous_commit=off"}
"""Workers' sessions do not wait for WAL flushes: commits stay atomic and
visible at once; only durability across a server crash, which no test here
exercises, is given up. On a busy CI machine this halves the time per job."""

PERSISTENT_CONNECTIONS = {"conn_max_age": "60"}
"""For the throughput tests: with Django's default ``CONN_MAX_AGE = 0`` every
run opens a new database connection (the worker calls
``close_old_connections`` around each handler), which dominates a no-op job."""


def database_name() -> str:
    """The name of the database this test runs on."""
    return str(direct_settings()["NAME"])


def database_url(**query: str) -> str:
    """The URL of the database this test runs on (``test_workhorse``), with
    django-environ ``query`` options (``conn_max_age``, ``options``): the
    server's own, in a pooled run too."""
    s = direct_settings()
    user = quote(s.get("USER") or "", safe="")
    password = quote(s.get("PASSWORD") or "", safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = s.get("HOST") or "127.0.0.1"
    port = f":{s['PORT']}" if s.get("PORT") else ""
    url = f"postgres://{auth}{host}{port}/{quote(s['NAME'], safe='')}"
    return f"{url}?{urlencode(query, quote_via=quote)}" if query else url


def _process_stats():
    """(pid, state, ppid, pgrp) of every process, read from /proc."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses
        fields = stat[stat.rindex(")") + 2 :].split()
        yield int(entry.name), fields[0], int(fields[1]), int(fields[2])


def live_processes_in_group(pgid: int) -> list[int]:
    """Pids of the processes of group ``pgid`` that are not zombies."""
    return [pid for pid, state, _ppid, pgrp in _process_stats() if state != "Z" and pgrp == pgid]


def children_of(pid: int) -> list[int]:
    """Pids of the live (non-zombie) children of ``pid``."""
    return sorted(
        child for child, state, ppid, _pgrp in _process_stats() if state != "Z" and ppid == pid
    )


class WorkerProcess:
    """One ``runworker`` subprocess (the supervisor, under ``--processes``)."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        env: dict[str, str],
        log_dir: Path,
        cwd: Path = TESTPROJECT,
    ) -> None:
        self.name = name
        self.argv = argv
        self.stderr_path = log_dir / f"{name}.stderr"
        self.stdout_path = log_dir / f"{name}.stdout"
        with self.stderr_path.open("wb") as err, self.stdout_path.open("wb") as out:
            self.proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    @property
    def returncode(self) -> int | None:
        return self.proc.poll()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def children(self) -> list[int]:
        """Live child processes (the workers of a ``--processes`` supervisor)."""
        return children_of(self.pid)

    def group(self) -> list[int]:
        """Every live process of this worker's process group, itself included."""
        return live_processes_in_group(self.pid)

    def cpu_seconds(self) -> float:
        """User plus system CPU time the process has used so far (all its threads)."""
        stat = Path(f"/proc/{self.pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def worker_ids(self) -> list[str]:
        """The ids the worker (or each child) announced when it became ready."""
        return READY_RE.findall(self.stderr)

    @property
    def worker_id(self) -> str:
        ids = self.worker_ids()
        assert ids, f"worker {self.name} has not announced its id:\n{self.stderr}"
        return ids[-1]

    def wait_ready(self, count: int = 1, timeout: float = 30.0) -> None:
        """Wait until ``count`` workers of this process announced they serve."""
        deadline = time.monotonic() + timeout
        while len(self.worker_ids()) < count:
            if not self.alive() and len(self.worker_ids()) < count:
                pytest.fail(
                    f"worker {self.name} exited with {self.returncode} before it was ready:\n"
                    f"{self.stderr}"
                )
            if time.monotonic() > deadline:
                pytest.fail(f"worker {self.name} not ready within {timeout} s:\n{self.stderr}")
            time.sleep(0.05)

    def send(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def wait_exit(self, timeout: float) -> int:
        """The exit code; fails the test if the process is still running after ``timeout``."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"worker {self.name} still running after {timeout} s:\n{self.stderr}")

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM, then wait for the exit; returns the exit code."""
        if self.alive():
            self.send(signal.SIGTERM)
        return self.wait_exit(timeout)

    def kill(self) -> None:
        """SIGKILL the process; its group goes too (``--processes`` children)."""
        self.kill_group()
        self.proc.wait(10)

    def kill_group(self) -> list[int]:
        """SIGKILL (after SIGCONT) every live process of the group; returns their pids."""
        pids = live_processes_in_group(self.pid)
        for signum in (signal.SIGCONT, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signum)
        if self.proc.poll() is None:
            self.proc.wait(10)
        deadline = time.monotonic() + 10
        while live_processes_in_group(self.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        return pids

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.stderr.splitlines()[-lines:])


class WorkerPool:
    """The workers one test started."""

    def __init__(self, log_dir: Path, pgbouncer: Any = None) -> None:
        self.log_dir = log_dir
        self.started: list[WorkerProcess] = []
        self.pgbouncer = pgbouncer
        """The session's PgBouncer in a pooled run (workers start behind it)."""
        self.bouncers: list[Any] = []
        """PgBouncers this test's workers went through (not in a pooled run):
        their server connections are closed after the test, so that no
        later test counts them (they carry the workers' application_name)."""

    def start(
        self,
        *flags: str,
        settings: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        name: str | None = None,
        ready: bool = True,
        processes: int = 1,
        persistent_connections: bool = False,
        through: Any = None,
    ) -> WorkerProcess:
        """Run ``manage.py runworker -v 2 *flags``; wait until it serves unless ``ready=False``
        (``processes``: how many workers must announce themselves, for ``--processes``).

        ``-v 2`` makes the worker log the line that says it is ready; a later
        ``-v`` in ``flags`` wins. ``through``: a ``PgBouncer`` the worker's
        database is reached through (``DATABASES['direct']`` is the server).
        """
        query = {**FAST_COMMITS, **(PERSISTENT_CONNECTIONS if persistent_connections else {})}
        pooled: dict[str, str] = {}
        if through is None and POOLED:
            through = self.pgbouncer
            settings = {"LISTEN_DATABASE": "direct", **(settings or {})}
        elif through is not None:
            self.bouncers.append(through)
        if through is not None:
            # PgBouncer refuses the startup option "options" (FAST_COMMITS):
            # commits through it wait for their flush, as in production.
            direct = database_url(**query)
            query.pop("options")
            pooled = {
                "DATABASE_URL": through.url_for(database_name())
                + (f"?{urlencode(query, quote_via=quote)}" if query else ""),
                "DIRECT_DATABASE_URL": direct,
                "DATABASE_POOLED": "1",
            }
        full_env = {
            **os.environ,
            # This checkout's package first: an editable install may point at another.
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(TESTPROJECT.parent), os.environ.get("PYTHONPATH")])
            ),
            "DATABASE_URL": database_url(**query),
            "DJANGO_SETTINGS_MODULE": "testproject.settings",
            "WORKHORSE_JSON": json.dumps(settings or {}),
            "PYTHONUNBUFFERED": "1",
            **pooled,
            **(env or {}),
        }
        name = name or f"worker-{len(self.started)}"
        argv = [sys.executable, "manage.py", "runworker", "-v", "2", *flags]
        worker = WorkerProcess(name, argv, full_env, self.log_dir)
        self.started.append(worker)
        if ready:
            worker.wait_ready(count=processes)
        return worker

    def report(self) -> str:
        return "\n".join(
            f"--- {w.name} (pid {w.pid}, exit {w.returncode}) stderr:\n{w.tail()}"
            for w in self.started
        )

    def reap(self) -> list[str]:
        """Kill everything still running; describe what was."""
        leaked = []
        for worker in self.started:
            pids = live_processes_in_group(worker.pid)
            if pids:
                worker.kill_group()
                leaked.append(f"{worker.name} (pids {pids})")
        return leaked


@pytest.fixture
def workers(
    request: pytest.FixtureRequest, transactional_db: None, tmp_path: Path
) -> Iterator[WorkerPool]:
    """The test's worker processes; a worker left running fails the test.

    Depends on ``transactional_db`` so that its teardown (killing workers)
    runs before the database is flushed and the workhorse tables truncated.
    """
    pool = WorkerPool(tmp_path, request.getfixturevalue("pgbouncer") if POOLED else None)
    yield pool
    leaked = pool.reap()
    for bouncer in set(pool.bouncers):
        bouncer.drop_server_connections(database_name())
    failed = getattr(request.node, "acceptance_call_failed", True)
    if failed and pool.started:
        print(pool.report())
    if leaked and not failed:
        pytest.fail(f"the test left worker processes running: {', '.join(leaked)}")


@pytest.fixture(scope="module")
def module_workers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerPool]:
    """Workers shared by a module's tests (e.g. started all at once); a worker
    still running when the module ends is killed and reported as an error."""
    pool = WorkerPool(
        tmp_path_factory.mktemp("workers"),
        request.getfixturevalue("pgbouncer") if POOLED else None,
    )
    yield pool
    leaked = pool.reap()
    if leaked:
        print(pool.report())
        pytest.fail(f"the module left worker processes running: {', '.join(leaked)}")


@pytest.fixture
def start_worker(workers: WorkerPool) -> Callable[..., WorkerProcess]:
    """``start_worker(*flags, settings=None, env=None, name=None, ready=True)``."""
    return workers.start


@pytest.fixture
def wait_until(workers: WorkerPool) -> Callable[..., Any]:
    """``wait_until(predicate, timeout=10, what="...")``: poll, fail with workers' stderr."""

    def wait(
        predicate: Callable[[], Any],
        timeout: float = 10.0,
        what: str | None = None,
        interval: float = 0.05,
    ) -> Any:
        return poll_until(
            predicate, timeout=timeout, interval=interval, what=what, context=workers.report
        )

    return wait
