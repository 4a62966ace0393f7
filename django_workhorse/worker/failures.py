"""Jobs the stall recovery took back or failed: their log lines and the
``ON_JOB_FAILURE`` call of a job failed by too many stalls; and
``job_failure``, the ``JobFailure`` of either kind of failure. A run's own
failure is closed by ``executor.close`` and reported by ``report.py``."""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..core.hooks import JobFailure
from ..db.store import ClaimedJob, Recovered
from ..exceptions import StalledJobError
from .logs import job_extra

logger = logging.getLogger("django_workhorse.worker")


def job_failure(
    job: ClaimedJob | Recovered,
    *,
    will_retry: bool,
    exception: BaseException,
    timed_out: bool = False,
    stalled: bool = False,
) -> JobFailure:
    """The ``JobFailure`` of ``job``, a claimed job that failed or one that
    recovery failed: both name the job and its attempt alike."""
    return JobFailure(
        job_id=job.job_id,
        name=job.name,
        queue=job.queue,
        attempt=job.attempt,
        max_attempts=job.max_attempts,
        will_retry=will_retry,
        exception=exception,
        timed_out=timed_out,
        stalled=stalled,
    )


def stall_failure(item: Recovered) -> JobFailure:
    """What ``ON_JOB_FAILURE`` receives for a job failed by too many stalls."""
    return job_failure(
        item,
        will_retry=False,
        exception=StalledJobError(
            f"the job stalled {item.stall_count} times (max_stalled is {item.max_stalled}): "
            "its worker stopped renewing the lease"
        ),
        stalled=True,
    )


def log_recovered(item: Recovered) -> None:
    """A warning for a job taken back to run again; an error for one failed
    by too many stalls (it will not run again)."""
    extra = job_extra(item.job_id, item.queue, item.attempt, item.name)
    if item.failed:
        logger.error(
            "job %s %s #%s failed: it stalled %s times (max_stalled is %s); "
            "its worker stopped renewing the lease",
            item.name,
            item.queue,
            item.job_id,
            item.stall_count,
            item.max_stalled,
            extra=extra,
        )
    else:
        logger.warning(
            "job #%s recovered from an expired lease (stall %s)",
            item.job_id,
            item.stall_count,
            extra=extra,
        )


def call_stall_hook(hook: Callable[[JobFailure], object] | None, item: Recovered) -> None:
    """Tell ``ON_JOB_FAILURE`` about a job failed by too many stalls; a hook
    that raises is logged and processing goes on."""
    if hook is None:
        return
    try:
        hook(stall_failure(item))
    except BaseException:  # user code, as in call_hook
        logger.exception(
            "workhorse: on_job_failure hook raised for job %s; processing goes on",
            item.job_id,
            extra=job_extra(item.job_id, item.queue, item.attempt, item.name),
        )
