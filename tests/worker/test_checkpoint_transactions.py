"""A checkpoint is written in a transaction of its own, never inside the
handler's ``transaction.atomic()`` (docs/durable-execution.md, "Rules"): a
recorded stage stays recorded when the handler's transaction rolls back."""

from __future__ import annotations

from django.db import connection, transaction

import django_workhorse as workhorse
from tests.helpers import poll_until
from tests.worker.conftest import IN_PROCESS

pytestmark = IN_PROCESS

QUEUE = "inproc.checkpoint-atomic"


@workhorse.job(name="inproc.checkpoint_in_atomic", queue=QUEUE, max_attempts=1)
def checkpoint_in_atomic() -> None:
    with transaction.atomic():
        workhorse.current_job().checkpoint("inside", lambda: {"kept": True})
        raise RuntimeError("planned: rolls the handler's transaction back")


def test_a_stage_recorded_inside_the_handlers_transaction_survives_its_rollback(start_worker):
    handle = checkpoint_in_atomic.enqueue()
    worker = start_worker({QUEUE: 1})

    poll_until(
        lambda: handle.refresh().status == "failed",
        timeout=30,
        interval=0.02,
        what="the job to fail",
    )
    worker.stop()

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name, result::text FROM workhorse_get_checkpoints_v1(%s)", [handle.id]
        )
        assert cursor.fetchall() == [("inside", '{"kept": true}')]
    assert "planned: rolls" in handle.refresh().error["message"]
