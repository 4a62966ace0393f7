"""``run_jobs(names=[...])`` runs only those jobs, on whatever queue, and the
others stay queued (docs/testing.md), however many of them are queued ahead
of a wanted one in the same queue."""

from __future__ import annotations

import pytest

import django_workhorse as workhorse
from django_workhorse.core import registry
from django_workhorse.testing import run_jobs

pytestmark = pytest.mark.django_db

BACKLOG = 250
"""More than one claim of ``run_jobs`` takes (100 per queue)."""


@pytest.fixture
def jobs(monkeypatch):
    monkeypatch.setattr(registry, "_jobs", dict(registry._jobs))

    @workhorse.job(name="audit.names.bulk", queue="audit.names")
    def bulk(i: int) -> int:
        return i

    @workhorse.job(name="audit.names.wanted", queue="audit.names")
    def wanted() -> str:
        return "ran"

    return bulk, wanted


def test_a_wanted_job_behind_a_backlog_of_other_names_runs_and_the_backlog_stays(jobs, db_rows):
    bulk, wanted = jobs
    backlog = bulk.enqueue_many([{"i": i} for i in range(BACKLOG)])
    handle = wanted.enqueue()

    report = run_jobs(names=[wanted])

    assert report.names() == ["audit.names.wanted"]
    assert handle.refresh().result == "ran"
    waiting = [db_rows.runtime(h.id) for h in backlog]
    assert {(r["state"], r["attempt"]) for r in waiting} == {("ready", 0)}

    rest = run_jobs()
    assert [run.value for run in rest.runs] == list(range(BACKLOG))  # still in their order


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"queues": "audit.names"}, TypeError, "run_jobs(queues=...) takes a list, got str"),
        ({"names": "audit.names.wanted"}, TypeError, "write names=['audit.names.wanted']"),
        ({"queues": ["bad name!"]}, ValueError, "queue name 'bad name!' is not valid"),
        ({"queues": [5]}, ValueError, "a queue name must be a string, got int 5"),
    ],
)
def test_names_and_queues_that_are_not_lists_of_names_are_refused(jobs, options, error, message):
    _, wanted = jobs
    handle = wanted.enqueue()
    with pytest.raises(error) as raised:
        run_jobs(**options)
    assert message in str(raised.value)
    assert handle.refresh().status == "ready"  # nothing ran, silently or not


def test_a_job_of_another_name_handed_back_shows_a_claim_and_a_release(jobs, db_rows):
    bulk, wanted = jobs
    other = bulk.enqueue(i=1)
    wanted.enqueue()

    run_jobs(names=[wanted])

    kinds = [e.kind for e in workhorse.Admin().get_job_timeline(other.id).items]
    assert kinds == ["enqueued", "claimed", "released"]
    assert (db_rows.runtime(other.id)["state"], db_rows.runtime(other.id)["attempt"]) == (
        "ready",
        0,
    )
