"""The enqueue's statement carries a job type's options as literals, written
once (store.batch_statement): the server gets the text it got when each was a
parameter, and the caller's data stays in the parameters."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from demo.jobs import add
from django.db import connection

from tests.factories import options_row

pytestmark = pytest.mark.django_db

EVERY_OPTION_A_PARAMETER = (
    "SELECT job_id, inserted FROM workhorse_enqueue_batch_v1("
    "%s, %s::jsonb, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s::jsonb)"
)
PAYLOADS = '[{"a": 1, "b": "it\'s 100% \\\\ \\u00fc"}]'

ROWS = [
    pytest.param(options_row(), id="defaults"),
    pytest.param(
        options_row(
            queue="q-1.b",
            max_attempts=3,
            priority=-5,
            delay=2.5,
            idempotency_key="it's 100% \\ ü",
            timeout=0.000001,
            backoff_json='{"kind":"fixed","delay":1e-05}',
            max_stalled=0,
            trace_json='{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}',
        ),
        id="every-option",
    ),
    pytest.param(options_row(run_at=datetime(2030, 1, 2, 3, 4, 5, 6, tzinfo=UTC)), id="run-at"),
]


@pytest.mark.parametrize("row", ROWS)
def test_the_server_gets_the_text_it_got_with_every_option_a_parameter(row):
    before = [
        row.name,
        PAYLOADS,
        row.queue,
        row.max_attempts,
        row.priority,
        row.delay,
        row.run_at,
        row.idempotency_key,
        row.timeout,
        row.backoff_json,
        row.max_stalled,
        row.trace_json,
    ]
    with connection.cursor() as cursor:
        sent = cursor.mogrify(row.statement, row.parameters(PAYLOADS))

        assert sent == cursor.mogrify(EVERY_OPTION_A_PARAMETER, before)


def test_the_payload_and_the_key_reach_execute_wrappers_as_parameters():
    seen = []

    def wrapper(execute, sql, params, many, context):
        seen.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        add.options(idempotency_key="key-of-a-customer").enqueue(a=1, b=2)

    ((sql, params),) = seen
    assert '[{"a":1,"b":2}]' in params and "key-of-a-customer" in params
    assert '"a"' not in sql and "key-of-a-customer" not in sql


def test_a_job_types_statement_is_written_once():
    first = options_row(trace_json=None)
    traced = options_row(trace_json='{"traceparent":"x"}')

    assert traced.statement is first.statement
