"""What docs/sql.md says each SQL function returns, called as a psql user
calls it: by name, with plain arguments, reading its result columns."""

from __future__ import annotations

import json

import pytest

from tests.factories import (
    ActiveJobFactory,
    BlockedJobFactory,
    ReadyJobFactory,
    RetryingJobFactory,
    ScheduledJobFactory,
    SucceededJobFactory,
)

pytestmark = pytest.mark.django_db


JSONB_COLUMNS = {"error", "result", "data"}
"""The jsonb result columns these tests read (Django's cursor hands them over as text)."""


def rows(cursor, sql: str, params: list | None = None) -> list[dict]:
    cursor.execute(sql, params or [])
    names = [c[0] for c in cursor.description]
    return [
        {
            name: json.loads(value) if name in JSONB_COLUMNS and isinstance(value, str) else value
            for name, value in zip(names, row, strict=True)
        }
        for row in cursor.fetchall()
    ]


def events(cursor, job_id: int, kind: str) -> list[dict]:
    return rows(
        cursor,
        "SELECT attempt, data FROM workhorse_job_event WHERE job_id = %s AND kind = %s",
        [job_id, kind],
    )


def test_get_attempts_lists_a_jobs_closed_runs_oldest_first(cursor):
    job = RetryingJobFactory(worker="w-first")
    cursor.execute("SELECT workhorse_make_due_v1(ARRAY[%s])", [job.queue])
    (claim,) = rows(
        cursor,
        "SELECT * FROM workhorse_claim_many_v1('w-second', ARRAY[%s], ARRAY[1])",
        [job.queue],
    )
    cursor.execute(
        "SELECT * FROM workhorse_succeed_many_v1('w-second', ARRAY[%s]::bigint[],"
        " ARRAY[%s]::bigint[], ARRAY['3']::jsonb[])",
        [job.id, claim["fence"]],
    )

    attempts = rows(cursor, "SELECT * FROM workhorse_get_attempts_v1(%s)", [job.id])

    assert [(a["attempt"], a["outcome"], a["worker_id"]) for a in attempts] == [
        (1, "failed", "w-first"),
        (2, "succeeded", "w-second"),
    ]
    assert attempts[0]["error"]["type"] == "ValueError"
    assert attempts[1]["error"] is None
    assert all(a["started_at"] <= a["finished_at"] for a in attempts)
    assert attempts[0]["finished_at"] <= attempts[1]["started_at"]


def test_checkpoint_records_a_stage_under_the_runs_own_fence_only(cursor):
    job = ActiveJobFactory()
    call = "SELECT * FROM workhorse_checkpoint_v1(%s, %s, %s, %s, %s)"

    recorded = rows(cursor, call, [job.id, job.worker, job.fence, "charge", '{"id": 1}'])
    stale = rows(cursor, call, [job.id, job.worker, job.fence + 1, "mail", "true"])
    stranger = rows(cursor, call, [job.id, "someone-else", job.fence, "mail", "true"])

    assert recorded == [{"ok": True, "cancel_requested": False}]
    assert stale == stranger == [{"ok": False, "cancel_requested": False}]
    kept = rows(cursor, "SELECT * FROM workhorse_get_checkpoints_v1(%s)", [job.id])
    assert [(c["name"], c["kind"], c["result"], c["attempt"]) for c in kept] == [
        ("charge", "checkpoint", {"id": 1}, 1)
    ]


def test_checkpoint_reports_a_cancel_requested_of_its_running_job(cursor):
    job = ActiveJobFactory()
    cursor.execute("SELECT * FROM workhorse_cancel_v1(%s, 'stop', 'ops')", [job.id])

    (answer,) = rows(
        cursor,
        "SELECT * FROM workhorse_checkpoint_v1(%s, %s, %s, 'stage', '1')",
        [job.id, job.worker, job.fence],
    )

    assert answer == {"ok": True, "cancel_requested": True}


@pytest.mark.django_db(transaction=True)
def test_get_checkpoints_lists_stages_and_sleeps_oldest_first(cursor):
    """Each write commits on its own, as a worker's do (one transaction would
    give them all one written_at)."""
    job = ActiveJobFactory()
    for name in ("first", "second"):
        cursor.execute(
            "SELECT * FROM workhorse_checkpoint_v1(%s, %s, %s, %s, %s)",
            [job.id, job.worker, job.fence, name, json.dumps(name)],
        )
    cursor.execute(
        "SELECT * FROM workhorse_sleep_many_v1(%s, ARRAY[%s]::bigint[], ARRAY[%s]::bigint[],"
        " ARRAY['nap'], ARRAY[NULL]::timestamptz[], ARRAY[3600]::float8[])",
        [job.worker, job.id, job.fence],
    )

    kept = rows(cursor, "SELECT * FROM workhorse_get_checkpoints_v1(%s)", [job.id])

    assert [(c["name"], c["kind"], c["attempt"]) for c in kept] == [
        ("first", "checkpoint", 1),
        ("second", "checkpoint", 1),
        ("nap", "sleep", 1),
    ]
    assert [c["result"] for c in kept[:2]] == ["first", "second"]
    assert kept[0]["written_at"] <= kept[1]["written_at"] <= kept[2]["written_at"]


def test_sleep_of_a_job_whose_cancel_was_requested_ends_it_canceled(cursor, db_rows):
    job = ActiveJobFactory()
    cursor.execute("SELECT * FROM workhorse_cancel_v1(%s, 'no more', 'ops')", [job.id])

    (slept,) = rows(
        cursor,
        "SELECT * FROM workhorse_sleep_many_v1(%s, ARRAY[%s]::bigint[], ARRAY[%s]::bigint[],"
        " ARRAY['nap'], ARRAY[NULL]::timestamptz[], ARRAY[3600]::float8[])",
        [job.worker, job.id, job.fence],
    )

    assert (slept["job_id"], slept["ok"], slept["canceled"]) == (job.id, True, True)
    assert db_rows.outcome(job.id)["state"] == "canceled"
    assert db_rows.runtime(job.id) is None


def test_sleep_scheduled_at_its_wake_time_gives_the_attempt_back(cursor, db_rows):
    job = ActiveJobFactory()

    (slept,) = rows(
        cursor,
        "SELECT * FROM workhorse_sleep_many_v1(%s, ARRAY[%s]::bigint[], ARRAY[%s]::bigint[],"
        " ARRAY['nap'], ARRAY[NULL]::timestamptz[], ARRAY[3600]::float8[])",
        [job.worker, job.id, job.fence],
    )

    runtime = db_rows.runtime(job.id)
    assert (slept["ok"], slept["canceled"]) == (True, False)
    assert (runtime["state"], runtime["run_at"], runtime["worker_id"]) == (
        "scheduled",
        slept["run_at"],
        None,
    )
    # The next claim runs the same attempt: the sleep used none.
    assert runtime["attempt"] == 0
    (event,) = events(cursor, job.id, "slept")
    assert event["data"]["name"] == "nap"


def test_live_queues_lists_the_queues_holding_a_live_job_in_name_order(cursor):
    ReadyJobFactory(queue="live-b")
    ScheduledJobFactory(queue="live-a")
    ActiveJobFactory(queue="live-c")
    SucceededJobFactory(queue="live-done")

    every = rows(cursor, "SELECT * FROM workhorse_live_queues_v1()")
    of_name = rows(cursor, "SELECT * FROM workhorse_live_queues_v1(ARRAY['demo.jobs.add'])")
    of_other = rows(cursor, "SELECT * FROM workhorse_live_queues_v1(ARRAY['other.job'])")

    assert [r["queue"] for r in every] == ["live-a", "live-b", "live-c"]
    assert of_name == every
    assert of_other == []


def test_make_due_makes_the_scheduled_jobs_of_the_queues_due_now_with_an_event_each(
    cursor, db_rows
):
    later = [ScheduledJobFactory(queue="due-now") for _ in range(2)]
    elsewhere = ScheduledJobFactory(queue="due-later")

    cursor.execute("SELECT workhorse_make_due_v1(ARRAY['due-now'])")
    moved = cursor.fetchone()[0]
    now = db_rows.now()
    claimed = rows(
        cursor,
        "SELECT job_id FROM workhorse_claim_many_v1('w', ARRAY['due-now', 'due-later'],"
        " ARRAY[5, 5])",
    )

    assert moved == 2
    assert sorted(r["job_id"] for r in claimed) == [j.id for j in later]
    assert db_rows.runtime(elsewhere.id)["run_at"] > now
    assert [len(events(cursor, j.id, "made_due")) for j in later] == [1, 1]
    assert events(cursor, elsewhere.id, "made_due") == []


def test_queue_depth_counts_the_live_jobs_by_queue_and_state(cursor):
    ReadyJobFactory(queue="depth")
    ReadyJobFactory(queue="depth")
    ScheduledJobFactory(queue="depth")
    ActiveJobFactory(queue="depth-active")
    BlockedJobFactory(queue="depth")
    SucceededJobFactory(queue="depth-done")

    depth = {
        (r["queue"], r["state"]): r["jobs"]
        for r in rows(cursor, "SELECT * FROM workhorse_queue_depth_v1()")
        if r["queue"].startswith("depth")
    }

    assert depth == {
        ("depth", "ready"): 2,
        ("depth", "scheduled"): 1,
        ("depth", "blocked"): 1,
        ("depth-active", "active"): 1,
    }


def test_promote_makes_a_scheduled_job_ready_now_with_a_promoted_event(cursor, db_rows):
    scheduled = ScheduledJobFactory()
    ready = ReadyJobFactory()

    promoted = rows(cursor, "SELECT * FROM workhorse_promote_v1(%s)", [scheduled.id])
    again = rows(cursor, "SELECT * FROM workhorse_promote_v1(%s)", [ready.id])

    assert promoted == [{"status": "changed", "state": "ready"}]
    assert again == [{"status": "unchanged", "state": "ready"}]
    assert db_rows.runtime(scheduled.id)["state"] == "ready"
    assert len(events(cursor, scheduled.id, "promoted")) == 1


@pytest.mark.parametrize("function", ["workhorse_promote_v1(%s)", "workhorse_cancel_v1(%s)"])
def test_promote_and_cancel_of_an_id_no_job_has_answer_unknown(cursor, function):
    assert rows(cursor, f"SELECT * FROM {function}", [987654321]) == [
        {"status": "unknown", "state": None}
    ]


@pytest.mark.parametrize(
    ("factory", "answer"),
    [
        (ReadyJobFactory, {"status": "changed", "state": "canceled"}),
        (ScheduledJobFactory, {"status": "changed", "state": "canceled"}),
        (BlockedJobFactory, {"status": "changed", "state": "canceled"}),
        (ActiveJobFactory, {"status": "requested", "state": "active"}),
        (SucceededJobFactory, {"status": "unchanged", "state": "succeeded"}),
    ],
    ids=["ready", "scheduled", "blocked", "active", "succeeded"],
)
def test_cancel_answers_by_the_state_the_job_was_in(cursor, factory, answer):
    job = factory()

    assert rows(cursor, "SELECT * FROM workhorse_cancel_v1(%s, 'why', 'ops')", [job.id]) == [answer]


def test_cancel_of_a_job_not_running_stores_reason_by_and_at_in_its_envelope(cursor, db_rows):
    job = ReadyJobFactory()

    cursor.execute("SELECT * FROM workhorse_cancel_v1(%s, 'duplicate order', 'alice')", [job.id])

    (error,) = rows(cursor, "SELECT error FROM workhorse_job_outcome WHERE job_id = %s", [job.id])
    error = error["error"]
    assert (error["reason"], error["by"]) == ("duplicate order", "alice")
    assert error["at"]


def test_cancel_of_a_running_job_flags_it_with_an_event(cursor, db_rows):
    job = ActiveJobFactory()

    cursor.execute("SELECT * FROM workhorse_cancel_v1(%s, 'stop', 'ops')", [job.id])

    runtime = db_rows.runtime(job.id)
    assert (runtime["state"], runtime["cancel_requested"]) == ("active", True)
    assert len(events(cursor, job.id, "cancel_requested")) == 1


def test_set_queue_paused_says_whether_it_changed_the_flag(cursor):
    ReadyJobFactory(queue="pausable")
    call = "SELECT * FROM workhorse_set_queue_paused_v1('pausable', %s)"

    answers = [rows(cursor, call, [paused])[0] for paused in (True, True, False, False)]

    assert answers == [
        {"status": "changed", "paused": True},
        {"status": "unchanged", "paused": True},
        {"status": "changed", "paused": False},
        {"status": "unchanged", "paused": False},
    ]


def test_a_claim_skips_a_paused_queue(cursor):
    job = ReadyJobFactory(queue="paused-claim")
    cursor.execute("SELECT * FROM workhorse_set_queue_paused_v1('paused-claim', true)")
    claim = "SELECT job_id FROM workhorse_claim_many_v1('w', ARRAY['paused-claim'], ARRAY[5])"

    paused = rows(cursor, claim)
    cursor.execute("SELECT * FROM workhorse_set_queue_paused_v1('paused-claim', false)")
    resumed = rows(cursor, claim)

    assert paused == []
    assert resumed == [{"job_id": job.id}]


@pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])
def test_set_queue_paused_notifies_the_queue_on_resume_only(pg_connect):
    listener, caller = pg_connect(), pg_connect()
    listener.execute('LISTEN "workhorse:pause-notify"')
    call = "SELECT * FROM workhorse_set_queue_paused_v1('pause-notify', %s)"

    caller.execute(call, [True])
    on_pause = list(listener.notifies(timeout=0.3))
    caller.execute(call, [False])
    on_resume = list(listener.notifies(timeout=5, stop_after=1))

    assert on_pause == []
    assert [(n.channel, n.payload) for n in on_resume] == [("workhorse:pause-notify", "")]


@pytest.mark.parametrize("delay", ["1e20", "NaN"])
def test_fail_many_holds_a_retry_delay_to_at_most_100_years(cursor, db_rows, delay):
    """As Python holds a custom backoff's delay: a longer one (or NaN) from a
    SQL caller would be a due time no timestamp can hold."""
    job = ActiveJobFactory()

    (failed,) = rows(
        cursor,
        "SELECT ok, will_retry, retry_in FROM workhorse_fail_many_v1(%s, ARRAY[%s]::bigint[],"
        ' ARRAY[%s]::bigint[], ARRAY[\'{"type": "E"}\']::jsonb[], NULL, NULL,'
        " ARRAY[%s]::float8[])",
        [job.worker, job.id, job.fence, delay],
    )

    assert (failed["ok"], failed["will_retry"]) == (True, True)
    assert failed["retry_in"] == pytest.approx(3155760000, abs=1)
    assert db_rows.runtime(job.id)["state"] == "scheduled"
