"""The rules on single columns are domains (tables_v1.sql): they hold for every
write, an UPDATE from psql as much as an enqueue, and name the rule broken."""

import pytest
from django.db import IntegrityError, connection, transaction

from tests.factories import ActiveJobFactory, ReadyJobFactory, SucceededJobFactory

pytestmark = pytest.mark.django_db(transaction=True)


def refused(sql: str, params: list) -> str:
    """The message of the error ``sql`` raises (a check violation); nothing it
    wrote stays."""
    with (
        pytest.raises(IntegrityError) as caught,
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql, params)
    assert caught.value.__cause__.sqlstate == "23514"
    return str(caught.value)


@pytest.mark.parametrize(
    ("column", "value", "rule"),
    [
        ("priority", 500, "workhorse_job_priority_range"),
        ("max_attempts", 0, "workhorse_job_max_attempts_range"),
        ("queue", "no spaces", "workhorse_job_queue_format"),
        ("payload", "[1]", "workhorse_job_payload_object"),
        ("dependency_policy", "most", "workhorse_job_dependency_policy"),
        ("backoff", '{"kind": "fixed", "delay": -1}', "workhorse_job_backoff_policy"),
        ("backoff", '{"jitter": 2}', "workhorse_job_backoff_policy"),
    ],
)
def test_an_update_of_a_job_row_is_held_to_its_column_rule(column, value, rule):
    job = ReadyJobFactory()

    message = refused(f"UPDATE workhorse_job SET {column} = %s WHERE id = %s", [value, job.id])

    assert rule in message


@pytest.mark.parametrize(
    ("column", "value", "rule"),
    [
        ("state", "waiting", "workhorse_runtime_state"),
        ("attempt", -1, "workhorse_runtime_attempt_range"),
        ("stall_count", -1, "workhorse_runtime_stall_count_range"),
        ("run_at", "10000-01-01T00:00:00+00:00", "workhorse_runtime_run_at_range"),
    ],
)
def test_an_update_of_a_runtime_row_is_held_to_its_column_rule(column, value, rule):
    job = ActiveJobFactory()

    message = refused(
        f"UPDATE workhorse_job_runtime SET {column} = %s WHERE job_id = %s", [value, job.id]
    )

    assert rule in message


def test_the_rule_over_several_columns_stays_a_table_check():
    job = ActiveJobFactory()

    message = refused(
        "UPDATE workhorse_job_runtime SET worker_id = NULL WHERE job_id = %s", [job.id]
    )

    assert "workhorse_runtime_owner" in message


def test_an_outcome_row_takes_only_a_terminal_state():
    job = SucceededJobFactory()

    message = refused(
        "UPDATE workhorse_job_outcome SET state = 'ready' WHERE job_id = %s", [job.id]
    )

    assert "workhorse_outcome_state" in message


def test_a_client_reads_the_columns_as_their_base_types():
    job = ActiveJobFactory()

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT j.name, j.priority, j.payload, rt.state, rt.attempt, rt.run_at"
            " FROM workhorse_job j JOIN workhorse_job_runtime rt ON rt.job_id = j.id"
            " WHERE j.id = %s",
            [job.id],
        )
        described = [column.type_code for column in cursor.description]
        cursor.execute(
            "SELECT ARRAY['text', 'int2', 'jsonb', 'text', 'int4', 'timestamptz']::regtype[]::oid[]"
        )
        base_types = cursor.fetchone()[0]

    assert described == base_types
