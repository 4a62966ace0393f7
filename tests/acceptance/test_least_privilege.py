"""A worker runs under a role that can run jobs and nothing more (docs/security.md).

The role is created for this run only (roles are cluster-wide, so its name is
unique), given the grants of ``manage.py workhorse_worker_role``, and dropped
at the end.
"""

from __future__ import annotations

import io
import os
from datetime import UTC, datetime
from secrets import token_hex
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from demo.jobs import add
from django.core.management import call_command
from django.db import connection, connections

from django_workhorse.models import JobOutcome
from tests.acceptance.conftest import FAST_COMMITS, database_url
from tests.helpers import (
    CHURN_TABLES,
    autovacuum_off,
    make_dead_runtime_rows,
    table_stats,
    vacuum_churn_tables,
    vacuum_counts,
)

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


@pytest.fixture
def worker_role(transactional_db):
    """A LOGIN role with the worker grants; dropped (with its grants) afterwards."""
    role = f"workhorse_worker_{os.getpid()}_{token_hex(3)}"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE ROLE "{role}" LOGIN')
    call_command("workhorse_worker_role", role, "--apply", stdout=io.StringIO())
    yield role
    with connection.cursor() as cursor:
        cursor.execute(f'DROP OWNED BY "{role}"')
        cursor.execute(f'DROP ROLE "{role}"')


def url_as(role: str) -> str:
    parts = urlsplit(database_url(**FAST_COMMITS))
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{role}@{host}"))


def connect_as(role: str) -> psycopg.Connection:
    s = connection.settings_dict
    return psycopg.connect(
        dbname=s["NAME"],
        user=role,
        host=s.get("HOST") or "127.0.0.1",
        port=s.get("PORT") or 5432,
        autocommit=True,
    )


def test_a_worker_under_the_least_privilege_role_drains_jobs(worker_role, start_worker, wait_until):
    ids = [h.id for h in add.enqueue_many([{"a": i, "b": 1} for i in range(20)])]
    worker = start_worker(
        "--queues", "default", "--concurrency", "4", env={"DATABASE_URL": url_as(worker_role)}
    )

    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=ids, state="succeeded").count() == 20,
        timeout=60,
        what="the 20 jobs succeeded",
    )
    assert worker.stop() == 0
    assert sorted(JobOutcome.objects.filter(job_id__in=ids).values_list("result", flat=True)) == (
        sorted(i + 1 for i in range(20))
    )


def test_a_worker_under_the_least_privilege_role_leaves_vacuum_to_autovacuum(
    worker_role, start_worker, wait_until
):
    """The role owns no table, so a VACUUM by it would only warn: the worker
    says once, at INFO, that autovacuum must look after the tables with
    churn, and its later turns pass over them without a word."""
    with connection.cursor() as cursor, autovacuum_off(cursor):
        vacuum_churn_tables(cursor)
        make_dead_runtime_rows(cursor, 1500)
        wait_until(
            lambda: table_stats(cursor, "workhorse_job_runtime")["n_dead_tup"] >= 1500,
            timeout=30,
            what="1500 dead runtime tuples in the statistics",
        )
        before = vacuum_counts(cursor)
        worker = start_worker(
            "--queues",
            "default",
            "-v",
            "3",
            settings={"VACUUM_INTERVAL": 0.3},
            env={"DATABASE_URL": url_as(worker_role)},
        )

        wait_until(
            lambda: worker.stderr.count("workhorse vacuum: no table this role may vacuum") >= 3,
            timeout=30,
            what="three turns of the worker",
        )

        assert worker.stop() == 0
        assert vacuum_counts(cursor) == before
    told = [line for line in worker.stderr.splitlines() if "may not VACUUM" in line]
    assert len(told) == 1, told
    assert " INFO " in told[0]
    assert f"role {worker_role!r} may not VACUUM" in told[0]
    assert all(table in told[0] for table in CHURN_TABLES)
    assert "autovacuum must look after them" in told[0]
    troubles = [
        line
        for line in worker.stderr.splitlines()
        if (" WARNING " in line or " ERROR " in line) and "SIGTERM received" not in line
    ]
    assert troubles == []


@pytest.mark.parametrize(
    "statement",
    [
        "DROP TABLE workhorse_job",
        "DROP TABLE workhorse_job_runtime",
        "TRUNCATE workhorse_job_runtime",
        "TRUNCATE workhorse_job_event",
        "ALTER TABLE workhorse_job ADD COLUMN x integer",
        "CREATE TABLE workhorse_mine (x integer)",
        "SELECT count(*) FROM jobtests_runrecord",
        "SELECT count(*) FROM django_migrations",
    ],
)
def test_the_worker_role_cannot_change_the_schema_or_read_other_tables(worker_role, statement):
    with connect_as(worker_role) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(statement)


@pytest.fixture(scope="module")
def as_worker_alias(django_db_setup):
    """The alias ``as_worker`` on the test database, made for the module so
    that it exists before pytest-django checks a test's ``databases``."""
    connections.settings["as_worker"] = dict(connections["default"].settings_dict)
    try:
        yield "as_worker"
    finally:
        connections["as_worker"].close()
        del connections["as_worker"]
        del connections.settings["as_worker"]


@pytest.fixture
def alias_as(worker_role, as_worker_alias):
    """``as_worker``, connecting as the worker role for this test (and as the
    default alias's user again for the flush after it)."""
    settings_dict = connections[as_worker_alias].settings_dict
    settings_dict["USER"] = worker_role
    yield as_worker_alias
    connections[as_worker_alias].close()
    settings_dict["USER"] = connection.settings_dict["USER"]


# The flush after the test runs on every alias it names: with only the
# (unmanaged) workhorse tables available it has nothing to truncate, which
# the worker role could not do.
@pytest.mark.django_db(
    transaction=True, databases=["default", "as_worker"], available_apps=["django_workhorse"]
)
def test_the_admin_api_reads_and_acts_under_the_least_privilege_role(alias_as):
    from django_workhorse import Admin

    ready = add.options(queue="least-privilege-admin").enqueue(a=1, b=2)
    later = add.options(queue="least-privilege-admin", delay=3600).enqueue(a=2, b=2)
    admin = Admin(using=alias_as)
    with connections[alias_as].cursor() as cursor:
        cursor.execute("SELECT current_user")
        assert cursor.fetchone()[0] != connection.settings_dict["USER"]

    assert admin.get_job(ready.id).state == "ready"
    assert [s.id for s in admin.get_jobs([ready.id, later.id])] == [ready.id, later.id]
    assert [e.kind for e in admin.get_job_timeline(ready.id).items] == ["enqueued"]
    assert {r.id for r in admin.list_jobs(queue="least-privilege-admin").items} == {
        ready.id,
        later.id,
    }
    assert "least-privilege-admin" in admin.queue_names()
    assert [q.name for q in admin.queue_stats()] == ["least-privilege-admin"]
    assert admin.list_schedules() == []
    assert admin.workers()["holding_jobs"] == []
    assert admin.set_queue_limits("least-privilege-admin", global_concurrency=2).status == "changed"
    assert admin.pause_queue("least-privilege-admin").changed
    assert admin.resume_queue("least-privilege-admin").changed
    assert admin.promote(later.id).state == "ready"
    assert admin.cancel(ready.id, reason="not needed").state == "canceled"
    assert admin.retry(ready.id).state == "ready"
    assert [r.state for r in admin.bulk("cancel", [ready.id, later.id])] == [
        "canceled",
        "canceled",
    ]


def test_the_worker_role_cannot_run_its_code_as_the_owner_through_prune(worker_role):
    """workhorse_prune_v1 runs as its owner. A temporary table of the
    caller's, named like a table the function deletes from and with a
    trigger of the caller's on it, must not stand in for the real one: the
    trigger would run as the owner."""
    with connect_as(worker_role) as conn:
        conn.execute("CREATE TEMP TABLE ran_as (who text)")
        conn.execute(
            "CREATE FUNCTION pg_temp.record_user() RETURNS trigger LANGUAGE plpgsql AS"
            " $$ BEGIN INSERT INTO pg_temp.ran_as VALUES (current_user); RETURN OLD; END $$"
        )
        conn.execute("CREATE TEMP TABLE workhorse_job_event_default (at timestamptz)")
        conn.execute("INSERT INTO pg_temp.workhorse_job_event_default VALUES ('2000-01-01')")
        conn.execute(
            "CREATE TRIGGER record_user BEFORE DELETE ON pg_temp.workhorse_job_event_default"
            " FOR EACH ROW EXECUTE FUNCTION pg_temp.record_user()"
        )

        conn.execute("SELECT * FROM workhorse_prune_v1('2001-01-01', '2000-01-01', 10, false)")

        assert conn.execute("SELECT who FROM pg_temp.ran_as").fetchall() == []
        assert (
            conn.execute("SELECT count(*) FROM pg_temp.workhorse_job_event_default").fetchone()[0]
            == 1
        )


def test_the_functions_that_run_as_their_owner_search_pg_temp_last(cursor):
    """Left out of a search_path, pg_temp is searched first for tables; named
    last, a caller's temporary tables cannot stand in for the schema's."""
    cursor.execute(
        "SELECT proname, proconfig FROM pg_proc"
        " WHERE prosecdef AND proname LIKE 'workhorse\\_%' ORDER BY proname"
    )
    found = cursor.fetchall()
    cursor.execute("SELECT current_schema()")
    (schema,) = cursor.fetchone()

    assert [name for name, _ in found] == ["workhorse_ensure_partitions_v1", "workhorse_prune_v1"]
    assert all(config == [f"search_path={schema}, pg_temp"] for _, config in found), found


@pytest.fixture
def ungranted_role(transactional_db):
    """A LOGIN role given nothing: only what PostgreSQL gives PUBLIC."""
    role = f"workhorse_nobody_{os.getpid()}_{token_hex(3)}"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE ROLE "{role}" LOGIN')
    yield role
    with connection.cursor() as cursor:
        cursor.execute(f'DROP ROLE "{role}"')


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM workhorse_prune_v1(now() + interval '1 day', now(), 10, false)",
        "SELECT workhorse_ensure_partitions_v1(current_date, 1)",
    ],
)
def test_a_role_without_the_grants_cannot_run_the_functions_that_run_as_their_owner(
    ungranted_role, statement
):
    """PostgreSQL lets PUBLIC execute a new function; for these two that
    would let any role of the cluster drop history partitions as the owner."""
    with connect_as(ungranted_role) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(statement)


def test_the_grants_cover_every_workhorse_table_and_sequence(cursor):
    """A table or sequence added to the schema and forgotten in the grants
    would fail only the jobs that reach it, under that role alone."""
    from django_workhorse.management.commands import workhorse_worker_role as grants

    cursor.execute(
        "SELECT relname, relkind FROM pg_class"
        " WHERE relname LIKE 'workhorse\\_%' AND relkind IN ('r', 'p', 'S')"
        " AND NOT relispartition AND relnamespace = current_schema()::regnamespace"
    )
    found = cursor.fetchall()
    assert sorted(name for name, kind in found if kind != "S") == sorted(
        grants.READ_WRITE + grants.READ_ONLY
    )
    assert sorted(name for name, kind in found if kind == "S") == sorted(grants.SEQUENCES)


def test_checkpoints_sleeps_and_a_retry_work_under_the_least_privilege_role(
    worker_role, start_worker, wait_until
):
    from demo.jobs import sleep_once, ten_checkpoints

    from django_workhorse import Admin

    staged, slept = ten_checkpoints.enqueue(), sleep_once.enqueue()
    worker = start_worker(
        "--queues",
        "bench-checkpoints,bench-sleep",
        "--concurrency",
        "2",
        env={"DATABASE_URL": url_as(worker_role)},
    )
    wait_until(
        lambda: (
            JobOutcome.objects.filter(job_id__in=[staged.id, slept.id], state="succeeded").count()
            == 2
        ),
        timeout=60,
        what="the checkpointing and the sleeping job succeeded",
    )
    assert worker.stop() == 0
    assert [c.kind for c in Admin().get_job(slept.id).checkpoints] == ["sleep"]
    assert len(Admin().get_job(staged.id).checkpoints) == 10

    canceled = add.options(queue="least-privilege-retry").enqueue(a=1, b=2)
    Admin().cancel(canceled.id)
    with connect_as(worker_role) as conn:
        status = conn.execute(
            "SELECT status FROM workhorse_retry_v1(%s, NULL, false)", [canceled.id]
        ).fetchone()[0]
    assert (status, Admin().get_job(canceled.id).state) == ("changed", "ready")


TODAY_UTC = "(now() AT TIME ZONE 'UTC')::date"


def partition_names(pattern: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname FROM pg_class WHERE relname LIKE %s ORDER BY relname", [pattern]
        )
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.parametrize(
    ("start", "days"),
    [
        ("'2999-01-01'::date", 3),
        (f"{TODAY_UTC} + 361", 8),  # its last day is 368 days ahead
        (f"{TODAY_UTC} - 2", 1),
    ],
    ids=["in-2999", "past-the-window", "before-yesterday"],
)
def test_the_worker_role_cannot_make_partitions_outside_the_window_around_today(
    worker_role, start, days
):
    before = partition_names("workhorse\\_job\\_event\\_p%")
    with connect_as(worker_role) as conn, pytest.raises(psycopg.Error) as refused:
        conn.execute(f"SELECT workhorse_ensure_partitions_v1({start}, {days})")

    assert refused.value.sqlstate == "22023"
    assert "are outside the window of" in str(refused.value)
    assert partition_names("workhorse\\_job\\_event\\_p%") == before


def test_the_worker_role_makes_partitions_up_to_the_last_day_of_the_window(worker_role):
    with connect_as(worker_role) as conn:
        (created,) = conn.execute(
            f"SELECT workhorse_ensure_partitions_v1({TODAY_UTC} + 366, 2)"
        ).fetchone()
        (last_day,) = conn.execute(f"SELECT to_char({TODAY_UTC} + 367, 'YYYYMMDD')").fetchone()

    assert created in (0, 1, 2, 3, 4)  # none when an earlier test made them
    assert partition_names(f"workhorse\\_job\\_event\\_p{last_day}") == [
        f"workhorse_job_event_p{last_day}"
    ]


@pytest.mark.parametrize(
    ("history_before", "jobs_before"),
    [
        ("now() + interval '400 days'", "now() - interval '7 days'"),
        ("now() - interval '7 days'", "'infinity'"),
        ("now() + interval '1 second'", "now()"),
    ],
    ids=["history-400-days-ahead", "jobs-infinity", "history-a-second-ahead"],
)
def test_the_worker_role_cannot_prune_with_a_cut_off_after_now(
    worker_role, history_before, jobs_before
):
    today = partition_names("workhorse\\_%\\_p" + datetime.now(UTC).strftime("%Y%m%d"))
    assert len(today) == 2  # made by the migration, as every day's by the workers
    with connect_as(worker_role) as conn, pytest.raises(psycopg.Error) as refused:
        conn.execute(
            f"SELECT * FROM workhorse_prune_v1({history_before}, {jobs_before}, 10, false)"
        )

    assert refused.value.sqlstate == "22023"
    assert "must not be after now" in str(refused.value)
    assert partition_names("workhorse\\_%\\_p" + datetime.now(UTC).strftime("%Y%m%d")) == today


def test_the_worker_role_prunes_up_to_now_and_today_s_partitions_stay(worker_role):
    today = partition_names("workhorse\\_%\\_p" + datetime.now(UTC).strftime("%Y%m%d"))
    with connect_as(worker_role) as conn:
        conn.execute("SELECT * FROM workhorse_prune_v1(now(), now(), 10, false)")

    assert partition_names("workhorse\\_%\\_p" + datetime.now(UTC).strftime("%Y%m%d")) == today
