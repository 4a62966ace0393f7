"""Enqueue stays on the idempotency index however stale the statistics are.

A producer's session may first plan ``workhorse_enqueue_many_v1`` while the
job table is empty, or after an ``ANALYZE`` of a fresh database; the table
then grows for days. With those statistics the idempotency lookup was once
planned as a hash join over a sequential scan of ``workhorse_job`` (6.8 ms
per single enqueue at 8,000 jobs, growing with the table). Each test here
takes statistics while the tables are empty (or removes them), then commits
thousands of jobs, and reads the executed plans of one enqueue.
"""

import json

import pytest
from demo.jobs import add

from django_workhorse.db import store
from tests.factories import options_row
from tests.integration.test_function_plans import explained, problems  # noqa: F401

pytestmark = pytest.mark.django_db

ROWS = 8000
PAYLOAD = '{"a": 1, "b": 2}'
STATS_TABLES = ("workhorse_job", "workhorse_job_runtime", "workhorse_job_query")


@pytest.fixture(scope="module", params=["analyzed-empty", "never-analyzed"])
def grown_after_statistics(request, committed_rows):
    """Statistics of empty tables (or none at all), then 8,000 committed jobs."""
    with committed_rows() as cursor:
        for table in STATS_TABLES:
            if request.param == "analyzed-empty":
                cursor.execute(f"ANALYZE {table}")
            else:
                cursor.execute("DELETE FROM pg_statistic WHERE starelid = %s::regclass", [table])
                cursor.execute(
                    "UPDATE pg_class SET reltuples = -1, relpages = 0 WHERE oid = %s::regclass",
                    [table],
                )
        cursor.execute(
            """
            INSERT INTO workhorse_job (name, queue, payload, max_attempts, idempotency_key)
            SELECT 'demo.add', 'plan-enqueue', '{"a": 1, "b": 2}', 5, 'key-' || g
            FROM generate_series(1, %s) g
            """,
            [ROWS],
        )
        yield


def one_job(key: str | None = None) -> str:
    job = {"name": "demo.add", "queue": "plan-enqueue", "payload": {"a": 1, "b": 2}}
    if key is not None:
        job["idempotency_key"] = key
    return json.dumps([job])


def test_a_single_enqueue_probes_indexes(grown_after_statistics, cursor, explained):  # noqa: F811
    for _ in range(6):  # past PL/pgSQL's switch to a generic plan
        store.enqueue_many(cursor, one_job())
    explained.clear()

    store.enqueue_many(cursor, one_job())

    assert explained
    assert problems(explained) == []


def test_a_keyed_enqueue_that_finds_its_twin_probes_indexes(
    grown_after_statistics,
    cursor,
    explained,  # noqa: F811
):
    for i in range(6):
        store.enqueue_many(cursor, one_job(f"key-{i + 1}"))
    explained.clear()

    rows = store.enqueue_many(cursor, one_job("key-77"))

    assert rows[0][1] is False  # the stored job holds the key
    assert problems(explained) == []


def test_the_public_enqueue_probes_indexes(grown_after_statistics, cursor, explained):  # noqa: F811
    for _ in range(6):
        add.options(queue="plan-enqueue").enqueue(a=1, b=2)
    explained.clear()

    add.options(queue="plan-enqueue", idempotency_key="fresh-key").enqueue(a=1, b=2)

    assert problems(explained) == []


def keyed(key: str) -> store.JobOptionsRow:
    return options_row(name="demo.add", queue="plan-enqueue", idempotency_key=key)


def test_a_keyed_single_enqueue_that_finds_its_twin_probes_indexes(
    grown_after_statistics,
    cursor,
    explained,  # noqa: F811
):
    for i in range(6):  # past PL/pgSQL's switch to a generic plan
        store.enqueue_batch(cursor, keyed(f"key-{i + 1}"), f"[{PAYLOAD}]")
    explained.clear()

    ((_job_id, inserted),) = store.enqueue_batch(cursor, keyed("key-77"), f"[{PAYLOAD}]")

    assert inserted is False  # the stored job holds the key
    assert explained
    assert problems(explained) == []
