"""A result the database refuses to store fails its own attempt, not the worker.

The refusal is staged with a trigger that raises ``program_limit_exceeded``
(what PostgreSQL raises for a jsonb value over its size limit) for one
result; the other jobs of the same batches must be recorded as usual.
"""

from __future__ import annotations

import pytest
from django.db import connection
from jobtests.jobs import async_echo

from django_workhorse.models import AttemptHistory, JobOutcome

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


@pytest.fixture
def refuse_poison():
    with connection.cursor() as cursor:
        cursor.execute(
            """
            CREATE FUNCTION jobtests_refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.result ->> 'echo' = 'poison' THEN
                    RAISE EXCEPTION 'staged refusal: result too large'
                        USING ERRCODE = 'program_limit_exceeded';
                END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER jobtests_refuse_poison BEFORE INSERT ON workhorse_job_outcome
                FOR EACH ROW EXECUTE FUNCTION jobtests_refuse_poison();
            """
        )
    yield
    with connection.cursor() as cursor:
        cursor.execute(
            "DROP TRIGGER jobtests_refuse_poison ON workhorse_job_outcome;"
            " DROP FUNCTION jobtests_refuse_poison()"
        )


@pytest.mark.usefixtures("refuse_poison")
def test_a_refused_result_fails_its_attempt_and_the_rest_are_recorded(start_worker, wait_until):
    values = [str(i) for i in range(20)]
    values[7] = "poison"
    ids = [h.id for h in async_echo.enqueue_many([{"value": v} for v in values])]
    worker = start_worker("--queues", "jobtests.async", "--concurrency", "20")

    wait_until(
        lambda: JobOutcome.objects.filter(job_id__in=ids).count() == 20,
        timeout=30,
        what="all 20 jobs terminal",
    )
    assert worker.stop() == 0

    poisoned = JobOutcome.objects.get(job_id=ids[7])
    assert (poisoned.state, poisoned.attempts) == ("failed", 1)
    assert "the database refused to store the result" in poisoned.error["message"]
    assert "staged refusal" in poisoned.error["message"]
    assert AttemptHistory.objects.get(job_id=ids[7]).outcome == "failed"
    others = JobOutcome.objects.filter(job_id__in=ids).exclude(job_id=ids[7])
    assert set(others.values_list("state", flat=True)) == {"succeeded"}
