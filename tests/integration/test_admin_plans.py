"""The job list's state filters read the index built for them. The statement
is built inside ``workhorse_list_jobs_v1``, so its plan is read with
auto_explain from the real call; sequential scans are disabled because a
test's tables are too small for the planner to prefer any index on its own:
what is checked is that the index matches the statement at all."""

from __future__ import annotations

import json

import pytest
from demo.jobs import add
from django.db import connection

from django_workhorse.db import store
from tests.factories import FailedJobFactory, ReadyJobFactory, SucceededJobFactory

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


def plans_of(conn, sql: str, params: list) -> str:
    notices: list[str] = []
    conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
    conn.execute("LOAD 'auto_explain'")
    for setting in (
        "auto_explain.log_min_duration = 0",
        "auto_explain.log_nested_statements = on",
        "client_min_messages = log",
        "enable_seqscan = off",
    ):
        conn.execute(f"SET {setting}")
    conn.execute(sql, params).fetchall()
    return "\n".join(notices)


def test_the_failed_filter_reads_the_partial_index_of_unsuccessful_outcomes(pg_connect):
    FailedJobFactory(queue="plans")
    plans = plans_of(
        pg_connect(), "SELECT * FROM workhorse_list_jobs_v1(p_state => %s)", ["failed"]
    )
    assert "workhorse_outcome_unsuccessful" in plans, plans


def test_a_live_state_filter_walks_the_runtime_table_not_history(pg_connect):
    ReadyJobFactory(queue="plans")
    plans = plans_of(pg_connect(), "SELECT * FROM workhorse_list_jobs_v1(p_state => %s)", ["ready"])
    assert "workhorse_job_runtime" in plans and "workhorse_job_outcome_pkey" in plans, plans
    assert "Seq Scan on workhorse_job_outcome" not in plans


def test_the_queue_dashboard_counts_live_jobs_through_the_per_state_indexes(pg_connect):
    ReadyJobFactory(queue="plans")
    plans = plans_of(
        pg_connect(), "SELECT * FROM workhorse_queue_stats_v1(p_count_limit => 10)", []
    )
    for index in (
        "workhorse_runtime_ready",
        "workhorse_runtime_scheduled",
        "workhorse_runtime_blocked",
    ):
        assert index in plans, plans
    assert "Seq Scan on workhorse_job_runtime" not in plans, plans


def test_the_error_type_filter_reads_the_index_of_unsuccessful_outcomes_by_error_type(pg_connect):
    """300 failures of one type and one of another, so that the type is worth
    an index to the planner (with a handful of rows any index will do)."""
    add.options(queue="plans").enqueue_many([{"a": i, "b": 0} for i in range(301)])
    with connection.cursor() as cursor:
        claimed = store.claim_many(cursor, "plans-w", ["plans"], [301], 30)
        errors = [json.dumps({"type": "KeyError", "message": "k"})] * 300
        errors.append(json.dumps({"type": "ValueError", "message": "v"}))
        store.fail_many(
            cursor,
            "plans-w",
            [c.job_id for c in claimed],
            [c.fence for c in claimed],
            errors,
            ["failed"] * 301,
            [False] * 301,
            [None] * 301,
        )
        cursor.execute("ANALYZE workhorse_job_outcome")
    plans = plans_of(
        pg_connect(),
        "SELECT * FROM workhorse_list_jobs_v1(p_state => %s, p_error_type => %s)",
        ["failed", "ValueError"],
    )
    assert "workhorse_outcome_error_type" in plans, plans


def test_the_queue_dashboard_reads_the_finish_counters_not_the_outcomes(pg_connect):
    SucceededJobFactory(queue="plans")
    plans = plans_of(pg_connect(), "SELECT * FROM workhorse_queue_stats_v1()", [])
    assert "workhorse_queue_minute" in plans, plans
    assert "workhorse_job_outcome" not in plans, plans
