"""The state machine is written once: the Python enums and the SQL CHECKs
list the same values, and the models refuse writes that would go around the
SQL functions."""

from __future__ import annotations

import re

import pytest

from django_workhorse.exceptions import ReadOnlyModelError, WorkhorseError
from django_workhorse.models import AttemptHistory, Job, JobEvent, JobOutcome, JobRuntime, Queue
from django_workhorse.states import AttemptOutcome, EventKind, JobState
from tests.factories import ActiveJobFactory

pytestmark = pytest.mark.django_db


def check_values(cursor, constraint: str) -> set[str]:
    """The quoted values of a CHECK constraint, read from the catalog."""
    cursor.execute(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = %s", [constraint]
    )
    return set(re.findall(r"'([a-z_]+)'::text", cursor.fetchone()[0]))


def test_job_states_are_those_the_runtime_and_outcome_checks_allow(cursor):
    assert check_values(cursor, "workhorse_runtime_state") == {s.value for s in JobState.live()}
    assert check_values(cursor, "workhorse_outcome_state") == {s.value for s in JobState.terminal()}
    assert set(JobState.values) == {s.value for s in (*JobState.live(), *JobState.terminal())}


def test_event_kinds_are_those_the_event_check_allows(cursor):
    assert check_values(cursor, "workhorse_event_kind") == set(EventKind.values)


def test_attempt_outcomes_are_those_the_history_check_allows(cursor):
    assert check_values(cursor, "workhorse_attempt_outcome") == set(AttemptOutcome.values)


def test_a_snapshot_is_terminal_exactly_in_the_terminal_states():
    assert [s for s in JobState if s.is_terminal] == list(JobState.terminal())


@pytest.mark.parametrize(
    ("write", "names"),
    [
        (lambda: JobRuntime.objects.update(state="ready"), "JobRuntime.update()"),
        (lambda: JobRuntime.objects.filter(job_id=0).delete(), "JobRuntime.delete()"),
        (lambda: JobOutcome.objects.bulk_create([]), "JobOutcome.bulk_create()"),
        (lambda: Job.objects.create(name="x"), "Job.create()"),
        (lambda: JobEvent.objects.all().delete(), "JobEvent.delete()"),
        (lambda: Queue.objects.update(paused=True), "Queue.update()"),
        (lambda: AttemptHistory.objects.get_or_create(id=1), "AttemptHistory.get_or_create()"),
    ],
)
def test_orm_writes_to_the_workhorse_tables_are_refused_naming_what_to_use(write, names):
    with pytest.raises(ReadOnlyModelError) as refused:
        write()
    message = str(refused.value)
    assert names in message
    assert "workhorse_" in message  # names the SQL function, table or Admin to use
    assert isinstance(refused.value, WorkhorseError)


def test_saving_or_deleting_a_loaded_row_is_refused(db_rows):
    made = ActiveJobFactory()
    runtime = JobRuntime.objects.get(job_id=made.id)
    assert runtime.state == JobState.ACTIVE
    with pytest.raises(ReadOnlyModelError, match="workhorse_claim_many_v1"):
        runtime.save()
    with pytest.raises(ReadOnlyModelError, match=r"JobRuntime\.delete\(\)"):
        runtime.delete()
    assert db_rows.runtime(made.id)["state"] == "active"
