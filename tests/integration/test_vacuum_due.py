"""``workhorse_vacuum_due_v1`` names the tables with churn whose dead tuples
are past both thresholds (more than 1,000, and more than 20% of live + dead)
and that nobody vacuumed within the quiet window; and, due or not, the ones
the calling role may not vacuum. ``store.vacuum_table`` runs the VACUUM.

Dead tuples are made by updating the runtime rows of jobs scheduled a day
ahead: each update leaves exactly one dead tuple, and nothing reads those
pages again to prune them before the statistics are read.
"""

from __future__ import annotations

import os
from secrets import token_hex

import pytest
from django.db import connection

from django_workhorse.db import store
from tests.helpers import (
    CHURN_TABLES,
    autovacuum_off,
    make_dead_runtime_rows,
    poll_until,
    table_stats,
    vacuum_churn_tables,
)

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])

RUNTIME = "workhorse_job_runtime"


@pytest.fixture
def cursor(transactional_db):
    """An autocommit cursor on tables with no dead tuples left by earlier
    tests, which autovacuum leaves alone."""
    with connection.cursor() as cur, autovacuum_off(cur):
        vacuum_churn_tables(cur)
        yield cur


def due(cursor, quiet_for: float = 0.0) -> dict[str, store.VacuumCandidate]:
    return {c.table: c for c in store.vacuum_due(cursor, quiet_for)}


def dead_tuples_seen(cursor, table: str, at_least: int) -> None:
    poll_until(
        lambda: table_stats(cursor, table)["n_dead_tup"] >= at_least,
        timeout=30,
        interval=0.1,
        what=f"{at_least} dead tuples of {table} in the statistics",
    )


def test_a_table_past_both_thresholds_is_due_and_its_vacuum_clears_it(cursor):
    make_dead_runtime_rows(cursor, 1200)
    dead_tuples_seen(cursor, RUNTIME, 1200)
    before = table_stats(cursor, RUNTIME)

    candidate = due(cursor)[RUNTIME]

    assert (candidate.due, candidate.may_vacuum) == (True, True)
    assert candidate.dead_tuples >= 1200
    assert candidate.live_tuples >= 1200

    assert store.vacuum_table(cursor, RUNTIME) == []

    after = table_stats(cursor, RUNTIME)
    assert after["vacuum_count"] == before["vacuum_count"] + 1
    assert after["n_dead_tup"] < 1000
    assert RUNTIME not in due(cursor)


def test_an_owner_gets_nothing_back_while_no_table_is_due(cursor):
    make_dead_runtime_rows(cursor, 300)
    dead_tuples_seen(cursor, RUNTIME, 300)

    assert due(cursor) == {}


def test_a_thousand_dead_tuples_or_fewer_are_not_due_whatever_their_share(cursor):
    make_dead_runtime_rows(cursor, 1000)
    dead_tuples_seen(cursor, RUNTIME, 1000)

    assert table_stats(cursor, RUNTIME)["n_live_tup"] == 1000
    assert RUNTIME not in due(cursor)


def test_dead_tuples_of_a_fifth_of_the_table_or_less_are_not_due(cursor):
    from demo.jobs import add

    add.options(queue="vacuum-live", delay=86400).enqueue_many(
        [{"a": i, "b": 0} for i in range(5000)]
    )
    make_dead_runtime_rows(cursor, 1100)  # 1,100 dead of 6,100 live + 1,100 dead: 15%
    dead_tuples_seen(cursor, RUNTIME, 1100)
    poll_until(
        lambda: table_stats(cursor, RUNTIME)["n_live_tup"] >= 6100,
        timeout=30,
        interval=0.1,
        what="6,100 live tuples in the statistics",
    )

    assert RUNTIME not in due(cursor)


def test_a_table_vacuumed_within_the_quiet_window_is_not_due(cursor):
    make_dead_runtime_rows(cursor, 1200)
    dead_tuples_seen(cursor, RUNTIME, 1200)

    assert RUNTIME not in due(cursor, quiet_for=3600)  # vacuumed by the fixture just now
    assert due(cursor, quiet_for=0)[RUNTIME].due


def test_dead_chunks_of_a_tables_toast_table_count_with_its_rows(cursor):
    """A rate-limited queue's claim record lives in the TOAST table once it is
    long, and each claim rewrites it: 100 rewrites leave fewer than 1,000 dead
    rows (fewer still once pruning reclaims them), but many more dead chunks."""
    store.set_queue_limits(cursor, "vacuum-toast", None, 10_000, 3600)
    for _ in range(100):
        cursor.execute(
            "UPDATE workhorse_queue SET"
            " rate_starts = ARRAY(SELECT now() - random() * interval '1 hour'"
            "                     FROM generate_series(1, 5000)),"
            " rate_counts = array_fill(1, ARRAY[5000])"
            " WHERE name = 'vacuum-toast'"
        )
    cursor.execute("SELECT pg_stat_force_next_flush()")

    candidate = poll_until(
        lambda: due(cursor).get("workhorse_queue"),
        timeout=30,
        interval=0.1,
        what="workhorse_queue due for its dead TOAST chunks",
    )

    assert candidate.dead_tuples > 1000
    assert table_stats(cursor, "workhorse_queue")["n_dead_tup"] < 1000  # the rows alone
    assert store.vacuum_table(cursor, "workhorse_queue") == []
    assert "workhorse_queue" not in due(cursor)


@pytest.fixture
def stranger(pg_connect):
    """A session of a role that owns nothing (and holds no grant)."""
    role = f"workhorse_stranger_{os.getpid()}_{token_hex(3)}"
    with connection.cursor() as cur:
        cur.execute(f'CREATE ROLE "{role}"')
    session = pg_connect()
    session.execute(f'SET ROLE "{role}"')
    yield session
    session.execute("RESET ROLE")
    with connection.cursor() as cur:
        cur.execute(f'DROP ROLE "{role}"')


def test_a_role_that_may_not_vacuum_gets_every_table_back_marked_so(cursor, stranger):
    make_dead_runtime_rows(cursor, 1200)
    dead_tuples_seen(cursor, RUNTIME, 1200)
    before = table_stats(cursor, RUNTIME)["vacuum_count"]

    with stranger.cursor() as theirs:
        found = due(theirs)
        # What the up-front check spares the worker: VACUUM only warns.
        warnings = store.vacuum_table(theirs, RUNTIME)

    assert sorted(found) == sorted(CHURN_TABLES)
    assert not any(c.may_vacuum for c in found.values())
    assert found[RUNTIME].due
    assert not found["workhorse_queue"].due
    assert warnings and RUNTIME in warnings[0][1]
    assert table_stats(cursor, RUNTIME)["vacuum_count"] == before


def test_from_postgresql_17_a_role_with_maintain_may_vacuum(cursor, stranger):
    if connection.pg_version < 170000:
        pytest.skip("the MAINTAIN privilege came with PostgreSQL 17")
    with stranger.cursor() as theirs:
        theirs.execute("SELECT current_user")
        (role,) = theirs.fetchone()
    cursor.execute(f'GRANT MAINTAIN ON workhorse_job_runtime TO "{role}"')
    try:
        with stranger.cursor() as theirs:
            found = due(theirs)
    finally:
        cursor.execute(f'REVOKE MAINTAIN ON workhorse_job_runtime FROM "{role}"')

    assert RUNTIME not in found
    assert not found["workhorse_queue"].may_vacuum
