"""A callable ``backoff`` (``attempt -> seconds``, docs/worker.md): the worker
computes the retry delay with it, clamped to 0 .. 3,155,760,000 s
(docs/settings.md); a callable that raises is logged and the job retries with
the default backoff, never lost. ``run_jobs`` does the same."""

from __future__ import annotations

from datetime import timedelta

import pytest
from jobtests.jobs import broken_retry_delay, waits_by_the_hour

import django_workhorse as workhorse
from django_workhorse.core import registry
from django_workhorse.models import AttemptHistory
from django_workhorse.testing import run_jobs

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

HUNDRED_YEARS = timedelta(seconds=3_155_760_000)


def retry_delay(handle) -> timedelta:
    """How long after its first attempt failed the job is due again."""
    failed = AttemptHistory.objects.get(job_id=handle.id, attempt=1)
    return handle.refresh().snapshot.run_at - failed.finished_at


def test_runworker_delays_a_retry_by_what_the_callable_says(start_worker, wait_until):
    hourly = waits_by_the_hour.enqueue()
    broken = broken_retry_delay.enqueue()

    worker = start_worker("--queues", "jobtests.backoff")
    wait_until(
        lambda: AttemptHistory.objects.filter(job_id=hourly.id).exists(),
        what="the first attempt of the hourly job closed",
    )
    # The broken callable is logged, and the job is retried all the same
    # (after the default backoff of about a second).
    wait_until(
        lambda: AttemptHistory.objects.filter(job_id=broken.id, attempt=2).exists(),
        what="the second attempt of the job with the broken backoff",
    )
    assert worker.stop() == 0

    assert hourly.refresh().status == "scheduled"
    assert retry_delay(hourly) == timedelta(hours=1)
    assert "backoff callable of jobtests.jobs.broken_retry_delay failed" in worker.stderr
    assert "this backoff is broken" in worker.stderr


@pytest.fixture
def backoffs(monkeypatch):
    monkeypatch.setattr(registry, "_jobs", dict(registry._jobs))

    def job_with(name: str, backoff):
        @workhorse.job(
            name=f"audit.backoff.{name}", queue="audit.backoff", max_attempts=2, backoff=backoff
        )
        def fails() -> None:
            raise RuntimeError("fails")

        return fails

    return job_with


@pytest.mark.parametrize(
    ("backoff", "delay"),
    [
        (lambda attempt: 90 * attempt, timedelta(seconds=90)),
        (lambda attempt: timedelta(minutes=2), timedelta(minutes=2)),
        (lambda attempt: 10**12, HUNDRED_YEARS),
    ],
    ids=["seconds", "timedelta", "beyond-100-years"],
)
def test_run_jobs_delays_a_retry_by_the_callable_clamped(backoffs, backoff, delay):
    handle = backoffs("clamped", backoff).enqueue()
    run_jobs(skip_waits=False)
    assert retry_delay(handle) == delay


def test_a_negative_delay_is_0_so_the_retry_runs_at_once(backoffs):
    handle = backoffs("negative", lambda attempt: -5).enqueue()
    report = run_jobs(skip_waits=False)  # only what is due runs: the retry is
    assert [(run.attempt, run.will_retry) for run in report.runs] == [(1, True), (2, False)]
    assert handle.refresh().status == "failed"


def test_run_jobs_retries_with_the_default_backoff_when_the_callable_raises(backoffs, caplog):
    def broken(attempt: int) -> float:
        raise RuntimeError("this backoff is broken")

    handle = backoffs("broken", broken).enqueue()
    report = run_jobs(skip_waits=False)
    assert [run.will_retry for run in report.runs] == [True]
    # The default: 1 s after a first attempt, give or take its 10 % jitter.
    assert timedelta(seconds=0.9) <= retry_delay(handle) <= timedelta(seconds=1.1)
    assert "backoff callable of audit.backoff.broken failed: this backoff is broken" in caplog.text
