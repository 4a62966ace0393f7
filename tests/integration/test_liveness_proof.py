"""A worker's liveness proof (docs/worker.md#liveness): a pulse on a direct
session proves the worker alive until its time runs out or the session ends;
stall recovery takes no job of a worker whose proof is current; and the
live worker with the smallest key leads the fleet's sweeps."""

from __future__ import annotations

import pytest

from django_workhorse.db import store
from tests.factories import ActiveJobFactory
from tests.helpers import poll_until

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


def key(cursor, owner: str) -> str:
    return store.worker_key(cursor, owner)


def test_a_pulse_proves_its_worker_alive_on_the_database_clock(cursor, pg_connect):
    session = pg_connect()
    store.pulse(session.cursor(), "w-pulse:1:aaaaaa", 30)
    assert key(cursor, "w-pulse:1:aaaaaa") in store.live_workers(cursor)
    name = session.execute("SHOW application_name").fetchone()[0]
    assert name.startswith("workhorse-listener ")
    assert name.endswith(" " + key(cursor, "w-pulse:1:aaaaaa"))


def test_the_owner_names_of_a_workers_later_claim_connections_lead_to_its_key(cursor):
    assert key(cursor, "host:12:abcdef+3") == key(cursor, "host:12:abcdef")
    assert key(cursor, "host:12:abcdef") != key(cursor, "host:12:abcdee")


def test_the_proof_runs_out_by_itself(cursor, pg_connect):
    store.pulse(pg_connect().cursor(), "w-short:1:aaaaaa", 0.3)
    worker = key(cursor, "w-short:1:aaaaaa")
    assert worker in store.live_workers(cursor)
    poll_until(
        lambda: worker not in store.live_workers(cursor),
        timeout=10,
        interval=0.05,
        what="the proof ran out",
    )


def test_the_proof_goes_with_its_session(cursor, pg_connect):
    session = pg_connect()
    store.pulse(session.cursor(), "w-gone:1:aaaaaa", 600)
    session.close()
    worker = key(cursor, "w-gone:1:aaaaaa")
    poll_until(
        lambda: worker not in store.live_workers(cursor),
        timeout=10,
        interval=0.05,
        what="the session gone",
    )


def test_stall_recovery_skips_the_jobs_of_a_worker_whose_proof_is_current(cursor, pg_connect):
    store.pulse(pg_connect().cursor(), "w-alive:1:aaaaaa", 600)
    job = ActiveJobFactory(lease_seconds=0, worker="w-alive:1:aaaaaa+1")
    assert store.recover_stalled(cursor) == []
    cursor.execute("SELECT state FROM workhorse_job_runtime WHERE job_id = %s", [job.id])
    assert cursor.fetchone()[0] == "active"


def test_stall_recovery_takes_the_jobs_once_the_proof_ran_out(cursor, pg_connect):
    store.pulse(pg_connect().cursor(), "w-frozen:1:aaaaaa", 0.3)
    job = ActiveJobFactory(lease_seconds=0, worker="w-frozen:1:aaaaaa")
    assert store.recover_stalled(cursor) == []
    recovered = poll_until(
        lambda: store.recover_stalled(cursor), timeout=10, interval=0.05, what="the proof ran out"
    )
    assert [r.job_id for r in recovered] == [job.id]


def test_a_proof_does_not_cover_another_workers_jobs(cursor, pg_connect):
    store.pulse(pg_connect().cursor(), "w-one:1:aaaaaa", 600)
    job = ActiveJobFactory(lease_seconds=0, worker="w-two:1:aaaaaa")
    assert [r.job_id for r in store.recover_stalled(cursor)] == [job.id]


def test_the_live_worker_with_the_smallest_key_leads_the_sweeps(cursor, pg_connect):
    ids = [f"w-lead:{n}:aaaaaa" for n in range(3)]
    sessions = {worker_id: pg_connect() for worker_id in ids}
    for worker_id, session in sessions.items():
        store.pulse(session.cursor(), worker_id, 600)
    leads = {w: store.pulse(s.cursor(), w, 600) for w, s in sessions.items()}
    first = min(ids, key=lambda w: key(cursor, w))
    assert leads == {w: w == first for w in ids}

    sessions.pop(first).close()  # the leader stops: the next one leads at its next pulse
    second = min(sessions, key=lambda w: key(cursor, w))
    poll_until(
        lambda: store.pulse(sessions[second].cursor(), second, 600),
        timeout=10,
        interval=0.05,
        what="the next worker leading",
    )
    others = [w for w in sessions if w != second]
    assert [store.pulse(sessions[w].cursor(), w, 600) for w in others] == [False]


def test_a_frozen_leader_hands_over_once_its_proof_ran_out(cursor, pg_connect):
    ids = sorted((f"w-freeze:{n}:aaaaaa" for n in range(2)), key=lambda w: key(cursor, w))
    leader, follower = (pg_connect() for _ in ids)
    assert store.pulse(leader.cursor(), ids[0], 0.5)
    assert not store.pulse(follower.cursor(), ids[1], 600)
    # The leader's session stays (a SIGSTOPped process keeps it); its proof runs out.
    poll_until(
        lambda: store.pulse(follower.cursor(), ids[1], 600),
        timeout=10,
        interval=0.05,
        what="the follower leading",
    )
