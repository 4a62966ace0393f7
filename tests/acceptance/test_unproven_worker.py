"""A worker that cannot prove it is alive stops its runs before another
worker may take their jobs (docs/worker.md#liveness): so a job never has two
live owners, even when its first worker is alive but cut off.

Worker A reaches PostgreSQL through a relay the test takes away: its
sessions end (and with them its liveness proof), every reconnection is
refused, yet its process runs on. Worker B, connected directly, takes the
job once its lease has run out; by then A's handler has been told to stop.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection
from jobtests.jobs import watches_its_lease

from django_workhorse.models import AttemptHistory, JobOutcome
from tests.acceptance.test_database_gone import url_through
from tests.proxy import Relay

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

SHORT = {
    "LOCK_DURATION": 4,
    "LOCK_RENEW_INTERVAL": 1,
    "STALLED_INTERVAL": 0.5,
    "POLL_INTERVAL": 0.5,
}


def mark(marks: Path, pid: int, what: str) -> float | None:
    path = marks / f"{pid}.{what}"
    return float(path.read_text()) if path.exists() else None


def test_a_worker_cut_off_from_the_database_stops_its_run_before_another_takes_the_job(
    start_worker, wait_until, tmp_path
):
    s = connection.settings_dict
    relay = Relay(s.get("HOST") or "127.0.0.1", int(s.get("PORT") or 5432))
    flags = ("--queues", "jobtests.liveness")
    cut = start_worker(
        *flags, "--id", "cut", env={"DATABASE_URL": url_through(relay)}, settings=SHORT
    )
    handle = watches_its_lease.enqueue(marks=str(tmp_path))
    wait_until(lambda: mark(tmp_path, cut.pid, "started"), what="the job running on A")
    other = start_worker(*flags, "--id", "other", settings=SHORT)

    relay.close()
    started_again = wait_until(
        lambda: mark(tmp_path, other.pid, "started"), timeout=40, what="the job taken by B"
    )
    (tmp_path / "finish").touch()  # every run of the job may end now
    wait_until(
        lambda: JobOutcome.objects.filter(job_id=handle.id).exists(),
        timeout=30,
        what="the job finished by B",
    )
    stopped = mark(tmp_path, cut.pid, "stopped")
    assert stopped is not None, "A's handler was never told to stop"
    assert stopped < started_again
    assert mark(tmp_path, cut.pid, "done") is None
    assert "could not prove it is alive" in cut.stderr

    relay.reopen()
    assert other.stop() == 0
    assert cut.stop() == 0
    outcome = JobOutcome.objects.get(job_id=handle.id)
    assert (outcome.state, outcome.attempts) == ("succeeded", 1)
    assert list(
        AttemptHistory.objects.filter(job_id=handle.id)
        .order_by("started_at")
        .values_list("outcome", "worker_id")
    ) == [("stalled", cut.worker_id), ("succeeded", other.worker_id)]
