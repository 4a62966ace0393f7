"""Each run starts from the worker's own context: a context variable one
handler sets (a logging or tracing library's per-job binding) is not seen by
the next job its thread or event loop runs (docs/worker.md#logs-and-context)."""

from __future__ import annotations

import pytest
from jobtests.jobs import REQUEST_TAG, atag_context, tag_context

from django_workhorse.testing import run_jobs

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)


@pytest.mark.parametrize("definition", [tag_context, atag_context], ids=["sync", "async"])
def test_a_run_does_not_see_the_context_variables_of_the_run_before(
    definition, start_worker, wait_until
):
    # One slot: the three runs go one after another on the same thread
    # (or event loop), each after the last one's handler set the variable.
    handles = [definition.enqueue(tag=tag) for tag in ("first", "second", "third")]
    worker = start_worker("--queues", "jobtests.context", "--concurrency", "1")
    for handle in handles:
        wait_until(lambda h=handle: h.refresh().status == "succeeded", what="the runs")
    assert worker.stop() == 0

    assert [handle.result for handle in handles] == [None, None, None]


@pytest.mark.parametrize("definition", [tag_context, atag_context], ids=["sync", "async"])
def test_run_jobs_gives_each_run_its_own_context_as_a_worker_does(definition):
    handles = [definition.enqueue(tag=tag) for tag in ("first", "second")]

    run_jobs(names=[definition])

    assert [handle.refresh().result for handle in handles] == [None, None]
    assert REQUEST_TAG.get() is None  # nor does the test's own context keep it
