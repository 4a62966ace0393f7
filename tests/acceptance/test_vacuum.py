"""Running workers keep the tables with churn vacuumed (docs/worker.md#vacuum):
a worker VACUUMs workhorse_job_runtime once its dead tuples pass the
threshold, leaves it alone below, holds no lock of its own across a turn (a
second worker's VACUUM of the same table skips it: SKIP_LOCKED), and does
none of it with ``VACUUM_INTERVAL = None``.

Each test first vacuums the tables with churn itself, so that dead tuples
left by earlier tests count for nothing, then makes its own. The workers run
with ``-v 3``: each turn logs a line at DEBUG, so a test that expects nothing
to happen waits for turns that did nothing, not for a span of time.
"""

from __future__ import annotations

import pytest
from demo.jobs import add
from django.db import connection

from django_workhorse.models import JobOutcome
from tests.helpers import (
    autovacuum_off,
    make_dead_runtime_rows,
    table_stats,
    vacuum_churn_tables,
    vacuum_counts,
)

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

RUNTIME = "workhorse_job_runtime"
QUICK = {"VACUUM_INTERVAL": 0.3}
NOTHING_DUE = "workhorse vacuum: no table this role may vacuum is due"
VACUUMED_RUNTIME = "workhorse vacuum: vacuumed workhorse_job_runtime ("


def runtime_stats() -> dict:
    with connection.cursor() as cursor:
        return table_stats(cursor, RUNTIME)


def counts() -> dict[str, int]:
    with connection.cursor() as cursor:
        return vacuum_counts(cursor)


@pytest.fixture(autouse=True)
def _no_autovacuum(transactional_db):
    with connection.cursor() as cursor, autovacuum_off(cursor):
        yield


def older_snapshots() -> list[tuple[int, str]]:
    """Other sessions of this database that hold a snapshot (pid, query)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, query FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL"
        )
        return cursor.fetchall()


@pytest.fixture
def dead_runtime_rows(transactional_db, wait_until):
    """``dead_runtime_rows(n)``: fresh tables, then ``n`` dead runtime tuples
    the statistics show; returns the vacuum counts from before any worker."""

    def make(count: int) -> dict[str, int]:
        # A session an earlier test left in a transaction (a blocker still
        # closing) would keep VACUUM from removing the rows made dead here.
        wait_until(
            lambda: not older_snapshots(),
            timeout=30,
            what="no other session of the test database in a transaction",
        )
        with connection.cursor() as cursor:
            vacuum_churn_tables(cursor)
            make_dead_runtime_rows(cursor, count)
        wait_until(
            lambda: runtime_stats()["n_dead_tup"] >= count,
            timeout=30,
            what=f"{count} dead tuples of {RUNTIME} in the statistics",
        )
        return counts()

    return make


def test_a_worker_vacuums_the_runtime_table_once_its_dead_tuples_pass_the_threshold(
    dead_runtime_rows, start_worker, wait_until
):
    before = dead_runtime_rows(1500)

    worker = start_worker("--queues", "default", settings=QUICK)

    wait_until(lambda: VACUUMED_RUNTIME in worker.stderr, timeout=30, what="the worker's VACUUM")
    assert runtime_stats()["vacuum_count"] == before[RUNTIME] + 1
    assert runtime_stats()["n_dead_tup"] < 1000
    line = next(x for x in worker.stderr.splitlines() if VACUUMED_RUNTIME in x)
    assert " INFO " in line
    assert worker.stop() == 0


def test_a_worker_leaves_a_table_below_the_threshold_alone(
    dead_runtime_rows, start_worker, wait_until
):
    before = dead_runtime_rows(500)

    worker = start_worker("--queues", "default", "-v", "3", settings=QUICK)

    wait_until(
        lambda: worker.stderr.count(NOTHING_DUE) >= 3,
        timeout=30,
        what="three turns of the worker that found nothing due",
    )
    assert counts() == before
    assert "workhorse vacuum: vacuumed" not in worker.stderr
    assert worker.stop() == 0


def test_two_workers_leave_no_lock_behind_and_one_vacuum_does_for_both(
    dead_runtime_rows, start_worker, wait_until
):
    """Two workers with turns every 0.3 s: the due table is vacuumed (by the
    one that leads the fleet's sweeps, or both at once while neither has
    pulsed yet, when the second VACUUM skips the table the first holds), then
    the turns find nothing due; no advisory lock is left."""
    before = dead_runtime_rows(1500)

    first = start_worker("--queues", "default", "-v", "3", settings=QUICK, name="first")
    second = start_worker("--queues", "default", "-v", "3", settings=QUICK, name="second")

    wait_until(
        lambda: runtime_stats()["vacuum_count"] > before[RUNTIME],
        timeout=30,
        what="a worker's VACUUM of the due table",
    )
    seen = sum(w.stderr.count(NOTHING_DUE) for w in (first, second))
    wait_until(
        lambda: sum(w.stderr.count(NOTHING_DUE) for w in (first, second)) >= seen + 2,
        timeout=30,
        what="two more turns with nothing due",
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
        assert cursor.fetchone()[0] == 0
    assert VACUUMED_RUNTIME in first.stderr + second.stderr
    assert first.stop() == 0
    assert second.stop() == 0


def test_vacuum_interval_none_turns_the_vacuum_off(dead_runtime_rows, start_worker, wait_until):
    before = dead_runtime_rows(1500)

    worker = start_worker("--queues", "default", "-v", "3", settings={"VACUUM_INTERVAL": None})
    ids = [h.id for h in add.enqueue_many([{"a": i, "b": 1} for i in range(20)])]
    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=ids, state="succeeded").count() == 20,
        timeout=30,
        what="the 20 jobs succeeded",
    )

    assert worker.stop() == 0
    assert "workhorse vacuum: off (VACUUM_INTERVAL is None)" in worker.stderr
    vacuum_lines = [x for x in worker.stderr.splitlines() if "workhorse vacuum:" in x]
    assert len(vacuum_lines) == 1, vacuum_lines
    assert counts() == before
