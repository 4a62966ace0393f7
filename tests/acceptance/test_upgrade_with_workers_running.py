"""A rolling upgrade with work in flight: the released django-workhorse,
installed from a wheel built from its git tag (tests/docs/fresh_project.py:
``released_commit``), runs a worker on a database it migrated; this
checkout's release, with one more migration made by the test (a
``CREATE OR REPLACE`` of ``workhorse_succeed_many_v1`` with a comment added:
tests/upgrade_project.py), migrates that database while the old worker
runs, starts a worker beside it, and the old worker is stopped with
SIGTERM, as docs/upgrading.md tells an operator to do.

Jobs of every kind wait or run when the migration runs, all enqueued by the
released side (before the migration, and two after it, one of which the
old worker claims and finishes on the migrated database): ready ones, a
scheduled one, one whose first attempt failed and waits for its retry, one
in a durable sleep, ones blocked on a prerequisite, checkpoints, and four
jobs active under the old worker. Three of those finish in the old
worker's shutdown grace, through the re-created function; the fourth
outlasts the grace and is released back to ready.

Every job ends succeeded with one succeeded attempt, its attempt history
and its event timeline. Each handler notes every run of itself, each
checkpoint's function and each finish in a file; what ran more than once,
and why:

- ``retrying`` runs twice: its first attempt fails by design; its
  checkpoint's function runs once (the second attempt replays it);
- ``sleeping`` runs twice: its durable sleep ends the first run, the
  wake-up runs the handler again from the top (docs/durable-execution.md);
  its checkpoint's function runs once;
- ``outlast`` runs twice: its first run, under the old worker, outlasts the
  shutdown grace, so the old worker releases it (no attempt used, a
  ``released`` event) and the new worker runs it again: the at-least-once
  of a job longer than the grace. Its checkpoint, recorded by the old
  release, is replayed by the new one, not run again.

Nothing else runs twice, and every handler finishes exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.acceptance.conftest import WorkerProcess, live_processes_in_group
from tests.docs.fresh_project import (
    CHECKOUT,
    build,
    create_database,
    database_dsn,
    database_server_env,
    drop_database,
    export_commit,
    made_once,
    make_venv,
    new_database_name,
    released_commit,
    venv_env,
)
from tests.helpers import poll_until
from tests.upgrade_project import (
    CHANGE,
    CHANGE_MIGRATION_NAME,
    CHANGED,
    DELAY,
    ENQUEUE_AFTER,
    ENQUEUE_BEFORE,
    SHUTDOWN_GRACE,
    UpgradeProject,
)

pytestmark = pytest.mark.fresh_venv

RELEASE = "0.1.0"

RUNS = {"retrying": 2, "sleeping": 2, "outlast": 2}
"""Runs of the handlers that run more than once (the docstring says why); one for the others."""

STAGES = {"retrying": ["charge"], "sleeping": ["before"], "outlast": ["started"]}
"""Each job's checkpoints, whose functions run once."""

ATTEMPTS = {
    "retrying": [(1, "failed"), (2, "succeeded")],
    "sleeping": [(1, "slept"), (1, "succeeded")],
}
"""attempt_history of each job, in order; one succeeded first attempt for the others."""

RUN = ["claimed", "attempt succeeded", "succeeded"]
TIMELINES = {
    "scheduled": ["enqueued", "promoted", *RUN],
    "retrying": ["enqueued", "claimed", "attempt failed", "retry_scheduled", "promoted", *RUN],
    "sleeping": ["enqueued", "claimed", "attempt slept", "slept", "promoted", *RUN],
    "outlast": ["enqueued", "claimed", "released", *RUN],
    **{
        label: ["enqueued", "unblocked", *RUN]
        for label in (
            "after-hold-1",
            "after-outlast",
            "after-retrying",
            "after-sleeping",
            "late-after-hold-2",
        )
    },
}
"""Each job's timeline (``workhorse_job_timeline_v1``, what the admin shows):
the kinds of its events, and of its attempts as ``attempt <outcome>``; a
ready job's for the others."""

AT_MIGRATION = {
    **{label: ("active", "old") for label in ("hold-1", "hold-2", "hold-3", "outlast")},
    **{label: ("scheduled", None) for label in ("scheduled", "retrying", "sleeping")},
    **{
        label: ("blocked", None)
        for label in ("after-hold-1", "after-outlast", "after-retrying", "after-sleeping")
    },
}
"""The live jobs when the migration runs, with the release of the worker of the
active ones; ready-1 and ready-2 have ended."""

RUN_BY_THE_NEW_WORKER = ("outlast", "after-hold-1", "late-after-hold-2", "after-outlast")
"""Jobs that became ready after the old worker stopped claiming."""

PRINT_PACKAGE = "import django_workhorse; print(django_workhorse.__file__)"


@pytest.fixture(scope="session")
def released_venv(tmp_path_factory, worker_id) -> Path:
    """The ``bin`` folder of a virtualenv holding release 0.1.0, pip-installed
    from a wheel built from its commit; made once for the test run."""
    commit = released_commit(RELEASE)

    def make(shared: Path) -> None:
        build(export_commit(commit, shared / "source"), shared / "dist", "--wheel")
        [wheel] = (shared / "dist").glob("*.whl")
        venv_bin = make_venv(shared / "venv")
        done = subprocess.run(
            [str(venv_bin / "python"), "-m", "pip", "install", str(wheel)],
            env=venv_env(venv_bin, {}),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stdout + done.stderr

    return made_once(tmp_path_factory, worker_id, f"release-{commit[:12]}", make) / "venv" / "bin"


class Side:
    """One release's commands in the project: ``manage.py`` run by its Python."""

    def __init__(self, name: str, python: str, env: dict[str, str], project: UpgradeProject):
        self.name = name
        self.python = python
        self.env = project.env(name, env)
        self.root = project.root

    def manage(self, *argv: str, **extra: str) -> subprocess.CompletedProcess[str]:
        """``manage.py *argv`` to its end, which must be a success."""
        done = subprocess.run(
            [self.python, "manage.py", *argv],
            cwd=self.root,
            env={**self.env, **extra},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{self.name}: manage.py {argv}:\n{done.stdout}{done.stderr}"
        return done

    def shell(self, code: str, **extra: str) -> str:
        """What ``manage.py shell -c code`` printed."""
        return self.manage("shell", "-v", "0", "-c", code, **extra).stdout

    def runworker(self, log_dir: Path, started: list[WorkerProcess]) -> WorkerProcess:
        """``runworker`` of 8 slots, added to ``started``, once it serves."""
        worker = WorkerProcess(
            self.name,
            [self.python, "manage.py", "runworker", "-v", "2", "--concurrency", "8"],
            self.env,
            log_dir,
            cwd=self.root,
        )
        started.append(worker)
        worker.wait_ready(timeout=60)
        return worker


@pytest.fixture
def project(tmp_path) -> Iterator[UpgradeProject]:
    server_env = database_server_env()
    database = new_database_name("wh_upgrade")
    create_database(server_env, database)
    try:
        yield UpgradeProject(tmp_path / "project", database, server_env)
    finally:
        drop_database(server_env, database)


def test_a_rolling_upgrade_ends_every_job_once_with_its_history(released_venv, project, tmp_path):
    old = Side("old", str(released_venv / "python"), venv_env(released_venv, {}), project)
    head = Side("head", sys.executable, dict(os.environ), project)
    workers: list[WorkerProcess] = []
    labels: dict[int, str] = {}

    def report() -> str:
        return "\n".join(f"--- {w.name} (exit {w.returncode}):\n{w.tail(60)}" for w in workers)

    assert old.shell(PRINT_PACKAGE).startswith(str(released_venv.parent / "lib"))
    assert head.shell(PRINT_PACKAGE).startswith(str(CHECKOUT / "django_workhorse"))

    with psycopg.connect(database_dsn(project.server_env, project.database)) as conn:
        conn.autocommit = True

        def live() -> dict[str, tuple[str, str | None]]:
            """Each live job's state, and the release of its worker."""
            rows = conn.execute(
                "SELECT job_id, state, split_part(worker_id, ':', 1) FROM workhorse_job_runtime"
            ).fetchall()
            return {labels[job_id]: (state, side or None) for job_id, state, side in rows}

        def wait(predicate, what: str, timeout: float = 60) -> None:
            poll_until(
                predicate,
                timeout=timeout,
                interval=0.05,
                what=what,
                context=lambda: f"live jobs: {live()}\n{report()}",
            )

        try:
            old.manage("migrate", "-v", "0")
            old_worker = old.runworker(tmp_path, workers)
            ids = json.loads(old.shell(ENQUEUE_BEFORE))
            labels.update((job_id, label) for label, job_id in ids.items())
            wait(lambda: live() == AT_MIGRATION, f"the live jobs {AT_MIGRATION}", timeout=DELAY)

            migrated = head.manage("migrate", "django_workhorse")
            assert f"Applying django_workhorse.{CHANGE_MIGRATION_NAME}... OK" in migrated.stdout
            [(body,)] = conn.execute("SELECT prosrc FROM pg_proc WHERE proname = %s", [CHANGED])
            assert body.startswith(f"\n{CHANGE}\n")
            assert old_worker.alive(), report()
            late = old.shell(ENQUEUE_AFTER, UPGRADE_HOLD_2=str(ids["hold-2"]))
            ids.update(json.loads(late))
            labels.update((job_id, label) for label, job_id in ids.items())
            wait(lambda: "late-ready" not in live(), "the old worker ran late-ready")
            checked = head.manage("check", "--database", "default")
            assert "workhorse." not in checked.stdout + checked.stderr, checked.stderr

            new_worker = head.runworker(tmp_path, workers)
            old_worker.send(signal.SIGTERM)
            wait(lambda: "SIGTERM received" in old_worker.stderr, "the old worker heard SIGTERM")
            project.touch("finish-holds")
            assert old_worker.wait_exit(SHUTDOWN_GRACE + 30) == 0, report()
            wait(lambda: not live(), "every job ended", timeout=DELAY + 60)
            assert new_worker.stop(30) == 0, report()
        finally:
            leaked = [w.name for w in workers if live_processes_in_group(w.pid)]
            for worker in workers:
                worker.kill_group()
        assert not leaked, report()

        outcomes = dict(conn.execute("SELECT job_id, state FROM workhorse_job_outcome"))
        history: dict[str, list[tuple[int, str, str]]] = {label: [] for label in ids}
        for job_id, attempt, outcome, side in conn.execute(
            "SELECT job_id, attempt, outcome, split_part(worker_id, ':', 1)"
            " FROM workhorse_attempt_history ORDER BY finished_at, id"
        ):
            history[labels[job_id]].append((attempt, outcome, side))
        timelines = {
            label: [
                kind if source == "event" else f"{source} {kind}"
                for source, kind in conn.execute(
                    "SELECT source, kind FROM workhorse_job_timeline_v1(%s)", [job_id]
                )
            ]
            for label, job_id in ids.items()
        }

    said = report()
    assert {labels[job_id]: state for job_id, state in outcomes.items()} == {
        label: "succeeded" for label in ids
    }, said
    assert {label: [(a, o) for a, o, _ in rows] for label, rows in history.items()} == {
        label: ATTEMPTS.get(label, [(1, "succeeded")]) for label in ids
    }, said
    assert timelines == {label: TIMELINES.get(label, ["enqueued", *RUN]) for label in ids}, said
    for label in ("hold-1", "hold-2", "hold-3"):
        assert history[label] == [(1, "succeeded", "old")], said

    records = project.records()
    assert Counter((r["label"], r["event"]) for r in records) == Counter(
        {
            **{(label, "run"): RUNS.get(label, 1) for label in ids},
            **{(label, "done"): 1 for label in ids},
            **{(label, f"stage:{name}"): 1 for label, names in STAGES.items() for name in names},
        }
    ), records
    outlast = [(r["event"], r["worker"].split(":")[0]) for r in records if r["label"] == "outlast"]
    assert outlast == [("run", "old"), ("stage:started", "old"), ("run", "head"), ("done", "head")]
    finished_by = {r["label"]: r["worker"].split(":")[0] for r in records if r["event"] == "done"}
    assert {label: finished_by[label] for label in RUN_BY_THE_NEW_WORKER} == {
        label: "head" for label in RUN_BY_THE_NEW_WORKER
    }, said
    assert finished_by["late-ready"] == "old", said
    assert "released 1 running job(s) back to ready" in old_worker.stderr, old_worker.stderr
    for worker in (old_worker, new_worker):
        assert " ERROR " not in worker.stderr and "Traceback" not in worker.stderr, said
    # The new worker says nothing of the schema or its functions: they are its own.
    warned = [line for line in new_worker.stderr.splitlines() if " WARNING " in line]
    assert [line.split(" WARNING ")[1] for line in warned] == [
        "django_workhorse.worker workhorse: SIGTERM received, finishing running jobs"
        f" (up to {SHUTDOWN_GRACE} s; send it again to stop now)"
    ], said


def test_a_clone_without_the_release_fails_saying_how_to_fetch_its_tags():
    with pytest.raises(pytest.fail.Exception) as failure:
        released_commit("0.0.0-never")

    assert "neither a tag v0.0.0-never nor a commit 'Release 0.0.0-never'" in str(failure.value)
    assert "git fetch --tags" in str(failure.value)
