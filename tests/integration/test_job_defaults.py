"""A job's defaults are spelled once, in ``sql/workhorse_job_defaults_v1.sql``.

The database reads them through that function, Python reads the same JSON
from the same file, so the two cannot drift; and no other SQL or Python file
may spell them again (the source scans below fail the moment one does). The
settings that default to them (``DEFAULT_QUEUE``, ``DEFAULT_MAX_ATTEMPTS``,
``MAX_STALLED_COUNT``, ``DATABASE``) are all read when a job is enqueued.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.test import override_settings

from django_workhorse import fixed
from django_workhorse.core import conf, defaults, registry, schedules
from django_workhorse.core.backoff import Exponential
from django_workhorse.core.defaults import DEFAULTS_FILE, JOB_DEFAULTS
from django_workhorse.core.definitions import JobDefinition
from django_workhorse.db import store
from django_workhorse.exceptions import InvalidJobOptionError
from django_workhorse.models import Job

pytestmark = pytest.mark.django_db

PACKAGE = Path(defaults.__file__).parent.parent
OPTIONS = ("queue", "max_attempts", "priority", "max_stalled", "timeout", "backoff")


def stored(cursor, job_id: int) -> dict[str, object]:
    cursor.execute(
        "SELECT queue, max_attempts, priority, max_stalled,"
        " extract(epoch FROM timeout)::float8,"
        " coalesce(backoff, workhorse_job_defaults_v1() -> 'backoff')"
        " FROM workhorse_job WHERE id = %s",
        [job_id],
    )
    row = cursor.fetchone()
    backoff = row[5] if isinstance(row[5], dict) else json.loads(row[5])
    return dict(zip(OPTIONS, [*row[:5], backoff], strict=True))


def handler(note: str = "") -> None:
    return None


def test_the_database_and_python_read_the_same_defaults(cursor):
    cursor.execute("SELECT workhorse_job_defaults_v1()")
    (value,) = cursor.fetchone()
    in_database = value if isinstance(value, dict) else json.loads(value)
    assert in_database == defaults.defaults_json()
    assert set(in_database) == set(OPTIONS)


def test_a_job_enqueued_in_sql_with_nothing_named_gets_the_python_defaults(cursor):
    cursor.execute("SELECT job_id FROM workhorse_enqueue_v1('tests.sql_defaults')")
    (job_id,) = cursor.fetchone()
    assert stored(cursor, job_id) == {
        "queue": JOB_DEFAULTS.queue,
        "max_attempts": JOB_DEFAULTS.max_attempts,
        "priority": JOB_DEFAULTS.priority,
        "max_stalled": JOB_DEFAULTS.max_stalled,
        "timeout": JOB_DEFAULTS.timeout,
        "backoff": Exponential().policy(),
    }


def test_python_and_sql_store_the_same_job_when_nothing_is_named(cursor):
    job = JobDefinition(handler, name="tests.python_defaults")
    handle = job.enqueue()
    cursor.execute("SELECT job_id FROM workhorse_enqueue_v1('tests.sql_defaults')")
    (sql_job,) = cursor.fetchone()
    assert stored(cursor, handle.id) == stored(cursor, sql_job)


def test_a_column_left_out_of_an_insert_takes_the_same_defaults(cursor):
    cursor.execute(
        "INSERT INTO workhorse_job (id, name, queue, payload, max_attempts)"
        " VALUES (nextval('workhorse_job_id_seq'), 'tests.raw', 'raw', '{}', 1) RETURNING id"
    )
    (job_id,) = cursor.fetchone()
    row = stored(cursor, job_id)
    assert (row["priority"], row["max_stalled"], row["backoff"]) == (
        JOB_DEFAULTS.priority,
        JOB_DEFAULTS.max_stalled,
        Exponential().policy(),
    )


def test_the_backoff_delay_fills_a_missing_key_from_the_default_backoff(cursor):
    cursor.execute(
        "SELECT workhorse_backoff_delay_v1('{\"jitter\": 0}', 3),"
        ' workhorse_backoff_delay_v1(\'{"base": 2, "max": 3}\', 4)'
    )
    assert cursor.fetchone() == (JOB_DEFAULTS.backoff.base * 4, pytest.approx(3, rel=0.11))


def test_every_setting_that_defaults_a_job_is_read_when_the_job_is_enqueued(cursor):
    job = JobDefinition(handler, name="tests.read_at_enqueue")
    settings = {"DEFAULT_QUEUE": "later", "DEFAULT_MAX_ATTEMPTS": 9, "MAX_STALLED_COUNT": 4}
    with override_settings(WORKHORSE=settings):
        handle = job.enqueue()
        assert (job.queue, job.max_attempts) == ("later", 9)
    row = stored(cursor, handle.id)
    assert (handle.queue, row["queue"], row["max_attempts"], row["max_stalled"]) == (
        "later",
        "later",
        9,
        4,
    )
    assert job.queue == JOB_DEFAULTS.queue


def test_a_job_enqueued_before_the_settings_change_takes_the_new_defaults(cursor, settings):
    job = JobDefinition(handler, name="tests.defaults_change")
    first = job.enqueue()  # what an enqueue works out is kept while the settings stay
    with override_settings(WORKHORSE={"DEFAULT_QUEUE": "changed", "DEFAULT_MAX_ATTEMPTS": 7}):
        second = job.enqueue()
        with (
            override_settings(WORKHORSE={"DEFAULT_QUEUE": "no spaces please"}),
            pytest.raises(InvalidJobOptionError, match="queue"),
        ):
            job.enqueue()
    settings.WORKHORSE = {"MAX_STALLED_COUNT": 6}
    third = job.enqueue()

    rows = [stored(cursor, h.id) for h in (first, second, third)]
    assert [(r["queue"], r["max_attempts"], r["max_stalled"]) for r in rows] == [
        (JOB_DEFAULTS.queue, JOB_DEFAULTS.max_attempts, JOB_DEFAULTS.max_stalled),
        ("changed", 7, JOB_DEFAULTS.max_stalled),
        (JOB_DEFAULTS.queue, JOB_DEFAULTS.max_attempts, 6),
    ]


@pytest.mark.parametrize(
    ("setting", "value", "option"),
    [
        ("DEFAULT_QUEUE", "no spaces please", "queue"),
        ("DEFAULT_MAX_ATTEMPTS", 5000, "max_attempts"),
        ("MAX_STALLED_COUNT", -1, "max_stalled"),
    ],
)
def test_a_bad_default_from_the_settings_is_refused_at_enqueue_before_any_sql(
    setting, value, option
):
    job = JobDefinition(handler, name="tests.bad_setting")
    with (
        override_settings(WORKHORSE={setting: value}),
        pytest.raises(InvalidJobOptionError, match=option),
    ):
        job.enqueue()
    assert Job.objects.count() == 0


def test_the_database_alias_of_a_job_without_using_is_read_when_asked():
    job = JobDefinition(handler, name="tests.alias_at_use")
    with override_settings(WORKHORSE={"DATABASE": "reports"}):
        assert job.using == "reports"
    assert job.using == "default"


def test_a_schedule_takes_the_settings_defaults_as_they_are_when_it_is_synced(monkeypatch):
    monkeypatch.setattr(registry, "_jobs", {})
    job = JobDefinition(handler, name="tests.scheduled_defaults")
    registry.register(job)
    schedule = schedules.Schedule("nightly", job.name, "0 3 * * *")
    settings = {"DEFAULT_QUEUE": "nightly", "DEFAULT_MAX_ATTEMPTS": 2, "MAX_STALLED_COUNT": 3}
    with override_settings(WORKHORSE=settings):
        (row,) = json.loads(schedules.sync_json([schedule]))
    assert {key: row["job_options"][key] for key in ("queue", "max_attempts", "max_stalled")} == {
        "queue": "nightly",
        "max_attempts": 2,
        "max_stalled": 3,
    }


def test_the_settings_default_to_the_job_defaults():
    assert (
        conf.DEFAULTS["DEFAULT_QUEUE"],
        conf.DEFAULTS["DEFAULT_MAX_ATTEMPTS"],
        conf.DEFAULTS["MAX_STALLED_COUNT"],
    ) == (JOB_DEFAULTS.queue, JOB_DEFAULTS.max_attempts, JOB_DEFAULTS.max_stalled)


# -- no second spelling ----------------------------------------------------

SQL_SECOND_SPELLINGS = [
    # coalesce(x.queue, 'default'), coalesce(i.max_attempts, 5), ...: a literal fallback
    re.compile(
        r"coalesce\(\s*[\w.]*\b(?:queue|max_attempts|priority|max_stalled|timeout|backoff)\s*,"
        r"(?!\s*\(?\s*workhorse_job_defaults_v1)[^,)]*\)",
        re.IGNORECASE,
    ),
    # p_queue text DEFAULT 'default', p_max_attempts integer DEFAULT 5, ...
    re.compile(
        r"\bp_(?:queue|max_attempts|priority|max_stalled|timeout|backoff)\s+[\w ]+?"
        r"\s+DEFAULT(?!\s+NULL\b)",
        re.IGNORECASE,
    ),
    # priority smallint NOT NULL DEFAULT 0, backoff jsonb DEFAULT '{...}', ...
    re.compile(
        r"^\s*(?:queue|max_attempts|priority|max_stalled|timeout|backoff)\s+\w+[^,\n]*"
        r"\bDEFAULT(?!\s+\(?workhorse_job_defaults_v1)",
        re.IGNORECASE | re.MULTILINE,
    ),
    # the default backoff's JSON
    re.compile(r'"kind"\s*:\s*"exponential"\s*,\s*"base"'),
    # p_backoff ->> 'base', with a literal fallback
    re.compile(r"->>\s*'(?:base|max|jitter)'\)::double precision,\s*[\d.]+\)", re.IGNORECASE),
]

PYTHON_SECOND_SPELLINGS = [
    re.compile(r'"(?:DEFAULT_QUEUE|DEFAULT_MAX_ATTEMPTS|MAX_STALLED_COUNT)"\s*:\s*["\d]'),
    re.compile(r"\b(?:base|max|jitter)\s*(?::\s*[\w |]+)?=\s*[\d.]+\s*[,)\n]"),
    re.compile(r"\bpriority\s*:\s*int\s*=\s*\d"),
]


def sql_sources() -> list[Path]:
    return [p for p in sorted((PACKAGE / "sql").glob("*.sql")) if p.name != DEFAULTS_FILE]


def python_sources() -> list[Path]:
    return [
        p
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.name != "defaults.py" and "migrations" not in p.parts
    ]


def test_the_sources_searched_for_defaults_are_the_packages():
    assert len(sql_sources()) > 20, f"no SQL files under {PACKAGE / 'sql'}"
    assert any(p.name == "definitions.py" for p in python_sources())


@pytest.mark.parametrize("path", sql_sources(), ids=lambda p: p.name)
def test_no_sql_file_spells_a_job_default_again(path):
    text = re.sub(r"--[^\n]*", "", path.read_text())
    found = [m.group(0) for pattern in SQL_SECOND_SPELLINGS for m in pattern.finditer(text)]
    assert found == [], f"{path.name} spells a default that {DEFAULTS_FILE} holds"


def test_no_python_module_spells_a_job_default_again():
    found = {
        str(path.relative_to(PACKAGE)): match.group(0)
        for path in python_sources()
        for pattern in PYTHON_SECOND_SPELLINGS
        if (match := pattern.search(path.read_text()))
    }
    assert found == {}, f"read these from django_workhorse.core.defaults.JOB_DEFAULTS: {found}"


def test_the_scans_find_a_second_spelling_where_there_is_one():
    assert any(p.search("coalesce(i.max_attempts, 5)") for p in SQL_SECOND_SPELLINGS)
    assert any(p.search("    p_queue text DEFAULT 'default',") for p in SQL_SECOND_SPELLINGS)
    assert any(p.search("    max_stalled integer NOT NULL DEFAULT 1") for p in SQL_SECOND_SPELLINGS)
    assert any(p.search("    jitter: float = 0.1\n") for p in PYTHON_SECOND_SPELLINGS)
    assert any(p.search('    "MAX_STALLED_COUNT": 1,') for p in PYTHON_SECOND_SPELLINGS)


def test_the_default_backoff_is_stored_as_null_and_a_job_of_its_own_keeps_its_policy(cursor):
    default = JobDefinition(handler, name="tests.default_backoff").enqueue()
    own = JobDefinition(handler, name="tests.own_backoff", backoff=fixed(7)).enqueue()
    cursor.execute(
        "SELECT id, backoff FROM workhorse_job WHERE id = ANY(%s)", [[default.id, own.id]]
    )
    rows = {job_id: value for job_id, value in cursor.fetchall()}

    assert rows[default.id] is None
    assert json.loads(rows[own.id]) == {"kind": "fixed", "delay": 7.0}


def test_a_job_with_the_default_backoff_retries_after_the_default_delay(cursor):
    handle = JobDefinition(handler, name="tests.default_delay", queue="default-delay").enqueue()
    (claimed,) = store.claim_many(cursor, "w", ["default-delay"], [1], 30)
    (failed,) = store.fail_many(
        cursor, "w", [handle.id], [claimed.fence], ['{"type": "E"}'], ["failed"], [True], [None]
    )
    cursor.execute(
        "SELECT extract(epoch FROM rt.run_at - now()) FROM workhorse_job_runtime rt"
        " WHERE rt.job_id = %s",
        [handle.id],
    )
    (delay,) = cursor.fetchone()

    assert failed.will_retry
    base, jitter = JOB_DEFAULTS.backoff.base, JOB_DEFAULTS.backoff.jitter
    assert base * (1 - jitter) <= delay <= base * (1 + jitter)
