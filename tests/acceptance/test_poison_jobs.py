"""A job whose stored payload Python cannot read fails alone; the worker goes on.

jsonb accepts what Python's JSON decoder refuses: a number with more digits
than ``sys.get_int_max_str_digits()``, one beyond a float's range, nesting
deeper than the decoder's recursion limit. Such a job can only come from
outside Python (``psql``, a trigger, another language), since ``enqueue``
refuses it; when one is claimed, its attempt fails without retry and with
an error that names what could not be read, and the rest of its batch runs.
"""

from __future__ import annotations

import pytest
from django.db import connection
from jobtests.jobs import record
from jobtests.models import RunRecord

from django_workhorse.models import AttemptHistory, JobOutcome, JobRuntime

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

POISONS = {
    "digits": '{"label": ' + "7" * 5000 + "}",
    # jsonb prints numbers in full: this fraction is beyond a float's range.
    "float-range": '{"label": 1' + "0" * 400 + ".5}",
    # Deep enough for Python's decoder, within PostgreSQL's default stack.
    "nesting": '{"label": ' + "[" * 11000 + "]" * 11000 + "}",
}


def enqueue_from_sql(payload_json: str) -> int:
    """Enqueue through the SQL function, as psql or another language would."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT job_id FROM workhorse_enqueue_v1(%s, %s, %s::jsonb, 5)",
            [record.name, record.queue, payload_json],
        )
        return cursor.fetchone()[0]


def test_a_poison_job_in_a_batch_of_100_fails_alone_under_two_workers(start_worker, wait_until):
    before = [h.id for h in record.enqueue_many([{"label": f"a{i}"} for i in range(50)])]
    poison = enqueue_from_sql(POISONS["digits"])
    after = [h.id for h in record.enqueue_many([{"label": f"b{i}"} for i in range(49)])]
    innocent = before + after
    flags = ("--queues", "jobtests.record", "--concurrency", "10")
    first, second = start_worker(*flags, name="w1"), start_worker(*flags, name="w2")

    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=[*innocent, poison]).count() == 100,
        timeout=60,
        what="all 100 jobs terminal",
    )

    assert first.alive() and second.alive(), "a worker died on the poison job"
    outcome = JobOutcome.objects.get(job_id=poison)
    assert (outcome.state, outcome.attempts) == ("failed", 1)
    assert outcome.error["type"] == "django_workhorse.exceptions.InvalidPayloadError"
    assert f"the stored payload of job #{poison} cannot be read" in outcome.error["message"]
    assert "4300" in outcome.error["message"]  # Python's digit limit, named
    succeeded = JobOutcome.objects.filter(job_id__in=innocent, state="succeeded")
    assert succeeded.count() == 99
    assert not JobRuntime.objects.filter(job_id__in=[*innocent, poison]).exists()
    assert not RunRecord.objects.filter(job_id=poison).exists()
    assert list(AttemptHistory.objects.filter(job_id=poison).values_list("outcome")) == [
        ("failed",)
    ]
    assert first.stop() == 0
    assert second.stop() == 0


def test_a_burst_worker_fails_each_kind_of_poison_alone_and_exits_0(start_worker):
    """Bug: the worker exited 1 with ``ValueError: Exceeds the limit (4300
    digits)`` from the claim, leaving the whole batch active under it."""
    mates = [h.id for h in record.enqueue_many([{"label": "mate"}] * 3)]
    poisons = {enqueue_from_sql(text): kind for kind, text in POISONS.items()}
    later = [h.id for h in record.enqueue_many([{"label": "later"}] * 3)]
    worker = start_worker(
        "--queues", "jobtests.record", "--concurrency", "10", "--burst", ready=False
    )

    assert worker.wait_exit(60) == 0, worker.stderr
    states = dict(JobOutcome.objects.values_list("job_id", "state"))
    assert states == {
        **dict.fromkeys(mates + later, "succeeded"),
        **dict.fromkeys(poisons, "failed"),
    }
    for job_id, kind in poisons.items():
        error = JobOutcome.objects.get(job_id=job_id).error
        assert "cannot be read by Python's JSON decoder" in error["message"], kind
    assert "Traceback" not in worker.stderr
