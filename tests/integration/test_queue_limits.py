"""Queue limits: set through ``Admin().set_queue_limits`` (which says what it
did), enforced by ``workhorse_claim_many_v1`` for every claimer alike; a job
held back by a limit stays ready and loses nothing."""

from datetime import timedelta

import psycopg
import pytest
from demo.jobs import add
from django.test import override_settings

from django_workhorse import Admin, InvalidQueryError, InvalidQueueLimitError, UnknownQueueError
from django_workhorse.core.conf import DEFAULTS, problems
from django_workhorse.db import store

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])

QUEUE = "limited"
SETTINGS = {"QUEUES": {QUEUE: {"concurrency": 4}}}


def enqueue(count: int) -> list[int]:
    return [add.options(queue=QUEUE).enqueue(a=i, b=1).id for i in range(count)]


@override_settings(WORKHORSE=SETTINGS)
def test_setting_limits_says_whether_they_changed():
    admin = Admin()
    first = admin.set_queue_limits(
        QUEUE, global_concurrency=2, rate=100, period=timedelta(minutes=1)
    )
    again = admin.set_queue_limits(QUEUE, global_concurrency=2, rate=100, period=60)
    removed = admin.set_queue_limits(QUEUE)

    assert (first.status, first.concurrency, first.rate, first.period) == ("changed", 2, 100, 60)
    assert again.status == "unchanged"
    assert (removed.status, removed.concurrency, removed.rate) == ("changed", None, None)


@override_settings(WORKHORSE=SETTINGS)
def test_the_old_name_concurrency_still_sets_the_global_cap_and_warns():
    with pytest.warns(DeprecationWarning, match=r"call it global_concurrency="):
        limits = Admin().set_queue_limits(QUEUE, concurrency=3)

    assert (limits.status, limits.concurrency) == ("changed", 3)


@override_settings(WORKHORSE=SETTINGS)
def test_both_names_at_once_are_refused():
    with pytest.raises(TypeError, match="pass global_concurrency= alone"):
        Admin().set_queue_limits(QUEUE, global_concurrency=3, concurrency=3)


def test_an_unknown_queue_is_a_clear_error():
    with pytest.raises(UnknownQueueError, match=r"unknown queue 'nowhere'.*known: "):
        Admin().set_queue_limits("nowhere", global_concurrency=1)


@pytest.mark.parametrize("name", [None, 5, "bad name", "email\n", "q" * 54])
def test_a_malformed_queue_name_is_refused_as_pause_queue_refuses_it(name):
    """It was an UnknownQueueError (a LookupError) saying the name is not a
    string; pause_queue and resume_queue raise InvalidQueryError."""
    with pytest.raises(InvalidQueryError, match=r"is not a queue name: use 1 to 53"):
        Admin().set_queue_limits(name, global_concurrency=1)


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({"global_concurrency": 0}, "'global_concurrency' must be a whole number from 1"),
        ({"rate": 10}, "'rate' and 'period' go together"),
        ({"rate": 0, "period": 1}, "'rate' must be a whole number from 1 to 10000"),
        ({"rate": 5, "period": -1}, "'period' must be more than 0"),
        # Shorter than the database's microsecond: it was stored as 0 and
        # refused by a CHECK constraint, an IntegrityError from deep inside.
        ({"rate": 5, "period": 1e-9}, r"'period' must be more than 0 \(at least 1 microsecond\)"),
    ],
)
@override_settings(WORKHORSE=SETTINGS)
def test_a_bad_limit_is_a_clear_error(limits, message):
    with pytest.raises(InvalidQueueLimitError, match=message):
        Admin().set_queue_limits(QUEUE, **limits)


@override_settings(WORKHORSE=SETTINGS)
def test_a_concurrency_limit_caps_active_jobs_across_claimers(cursor, db_rows):
    ids = enqueue(5)
    Admin().set_queue_limits(QUEUE, global_concurrency=2)

    first = store.claim_many(cursor, "worker-a", [QUEUE], [4], 30)
    second = store.claim_many(cursor, "worker-b", [QUEUE], [4], 30)

    assert (len(first), len(second)) == (2, 0)
    waiting = [db_rows.runtime(i)["state"] for i in ids if i not in {j.job_id for j in first}]
    assert waiting == ["ready"] * 3  # held back, not failed: nothing lost
    store.succeed_many(cursor, "worker-a", [first[0].job_id], [first[0].fence], ["1"])
    assert len(store.claim_many(cursor, "worker-b", [QUEUE], [4], 30)) == 1


@override_settings(WORKHORSE=SETTINGS)
def test_a_rate_limit_caps_claims_per_period_and_records_them(cursor, db_rows):
    enqueue(5)
    Admin().set_queue_limits(QUEUE, rate=3, period=3600)

    assert len(store.claim_many(cursor, "worker-a", [QUEUE], [2], 30)) == 2
    assert len(store.claim_many(cursor, "worker-b", [QUEUE], [4], 30)) == 1
    assert store.claim_many(cursor, "worker-b", [QUEUE], [4], 30) == []
    cursor.execute(
        "SELECT cardinality(rate_starts), rate_counts FROM workhorse_queue WHERE name = %s",
        [QUEUE],
    )
    assert cursor.fetchone() == (2, [2, 1])  # one entry per claim: its time and its count
    # The idle worker is told when the window reopens.
    assert store.next_run_at(cursor, [QUEUE]) is not None


def test_a_queue_without_limits_is_claimed_as_before(cursor):
    ids = [add.options(queue="free").enqueue(a=i, b=1).id for i in range(3)]
    claimed = store.claim_many(cursor, "worker-a", ["free"], [10], 30)
    assert sorted(j.job_id for j in claimed) == ids


def test_settings_name_the_limit_keys_that_are_wrong():
    queues = {
        "a": {"global_concurrency": 0},
        "b": {"rate": 10},
        "c": {"speed": 1},
        "c2": {"rate": 10, "period": 1e-9},
        "d": {"concurrency": 2, "global_concurrency": 4, "rate": 100, "period": 60},
    }
    found = problems({**DEFAULTS, "QUEUES": queues})
    assert [key for key, _ in found] == [
        "QUEUES['a']",
        "QUEUES['b']",
        "QUEUES['c']",
        "QUEUES['c2']",
    ]


def test_a_rate_period_shorter_than_a_microsecond_is_refused_from_psql(pg_connect):
    """PostgreSQL keeps intervals to the microsecond: a shorter period became
    0 and broke a CHECK constraint instead of the function's own message."""
    conn = pg_connect()
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"at least 1 microsecond"):
        conn.execute("SELECT * FROM workhorse_set_queue_limits_v1(%s, NULL, 5, 1e-9)", [QUEUE])
