"""A job can only depend on jobs of its own database (docs/durable-execution.md,
"Limits"): a handle from another alias is refused with InvalidJobOptionError
naming both, before anything is written."""

from __future__ import annotations

import pytest
from demo.jobs import add

from django_workhorse import InvalidJobOptionError, JobHandle
from django_workhorse.models import Job

pytestmark = pytest.mark.django_db


def test_a_prerequisite_of_another_database_is_refused_naming_both(side_alias):
    prerequisite = add.enqueue(a=1, b=2)
    elsewhere = JobHandle(prerequisite.id, prerequisite.name, prerequisite.queue, True, side_alias)
    before = Job.objects.count()

    with pytest.raises(InvalidJobOptionError) as raised:
        add.options(depends_on=[elsewhere]).enqueue(a=3, b=4)

    assert str(raised.value) == (
        f"depends_on: job #{prerequisite.id} lives in database 'side' and this job in "
        "'default'; a job can only depend on jobs of its own database"
    )
    assert Job.objects.count() == before
