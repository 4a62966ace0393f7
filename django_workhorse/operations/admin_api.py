"""``workhorse.Admin``: the operator's view of jobs, from Python.

Reads (a job's snapshot, its timeline, pages of jobs, queue statistics) and
operator actions (retry, promote, cancel, pause and resume a queue) over the
jobs of one database alias. Every read is one SQL function built to stay fast
with millions of jobs; every action is one SQL function that says what it did.
The Django admin pages are built on this class and nothing else.
"""

from __future__ import annotations

# What Admin's calls return, and the limits they keep, lived here up to
# 0.1.0: they stay importable from this module.
from ..db.snapshots import Checkpoint as Checkpoint
from ..db.snapshots import JobDependency as JobDependency
from ..db.snapshots import JobSnapshot as JobSnapshot
from ..db.snapshots import snapshot_of as snapshot_of
from .admin_base import check_queue_name as check_queue_name
from .admin_base import list_cursor as list_cursor
from .admin_results import BULK_BATCH_SIZE as BULK_BATCH_SIZE
from .admin_results import COUNT_CAP as COUNT_CAP
from .admin_results import LIVE_STATES as LIVE_STATES
from .admin_results import MAX_JOB_ID as MAX_JOB_ID
from .admin_results import MAX_PAGE as MAX_PAGE
from .admin_results import STATES as STATES
from .admin_results import TERMINAL_STATES as TERMINAL_STATES
from .admin_results import ActionResult as ActionResult
from .admin_results import ActionStatus as ActionStatus
from .admin_results import BulkOutcome as BulkOutcome
from .admin_results import FailureGroup as FailureGroup
from .admin_results import JobRow as JobRow
from .admin_results import Page as Page
from .admin_results import QueueStats as QueueStats
from .admin_results import TimelineEntry as TimelineEntry
from .admin_results import WorkerInfo as WorkerInfo
from .bulk_admin import BulkOperations
from .queue_admin import QueueOperations


class Admin(BulkOperations, QueueOperations):
    """Reads and operator actions over the jobs of one database alias.

    ``Admin(using=None)``: ``using`` is an alias of ``settings.DATABASES``,
    ``WORKHORSE['DATABASE']`` when not given. Its calls come in families,
    one module each: reads of jobs (``job_reads.py``), queues, schedules and
    workers (``queue_admin.py``), actions on one job (``job_actions.py``) and
    filter-wide actions (``bulk_admin.py``)."""
