"""``Admin``'s filter-wide actions: acting on every job a filter matches, in
batches or as a job of the operator queue, and reading those actions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import cast

from django.db import connections, transaction

from ..core import registry
from ..core.conf import get_retention
from ..core.limits import (
    shown,
)
from ..db import store
from ..db.snapshots import Checkpoint as Checkpoint  # (the names' old home)
from ..db.snapshots import JobDependency as JobDependency
from ..exceptions import InvalidQueryError
from . import bulk_actions
from .admin_base import (
    check_bulk_action,
    check_by,
    check_filters,
    check_job_id,
    check_job_ids,
    check_limit,
    check_reason,
)
from .admin_results import BULK_BATCH_SIZE, ActionResult, ActionStatus, BulkOutcome
from .bulk_actions import ACTION_STATES, OPERATOR_QUEUE, BulkAction
from .job_actions import JobActions
from .job_reads import JobReads


class BulkOperations(JobReads, JobActions):
    """Filter-wide actions (part of ``Admin``), made of its reads of jobs and its
    actions on one job."""

    def bulk_matching(
        self,
        action: str,
        *,
        queue: str | None = None,
        name: str | None = None,
        state: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        reason: str | None = None,
        by: str | None = None,
        batch_size: int = BULK_BATCH_SIZE,
        limit: int | None = None,
    ) -> BulkOutcome:
        """``retry`` or ``cancel`` every job matching ``list_jobs``' filters,
        newest first, ``batch_size`` jobs per transaction (so 100,000 jobs
        never hold one transaction, and a stop loses no finished batch).
        Each batch is the next page of the list as it stands when the batch
        starts; a job whose state no longer allows the action is counted
        ``unchanged``. ``limit`` stops after that many jobs."""
        check_bulk_action(action)
        if (
            not isinstance(batch_size, int)
            or isinstance(batch_size, bool)
            or not 1 <= batch_size <= 1000
        ):
            raise InvalidQueryError(f"batch_size must be from 1 to 1000; got {shown(batch_size)}")
        if limit is not None and (
            not isinstance(limit, int) or isinstance(limit, bool) or limit < 1
        ):
            raise InvalidQueryError(
                f"limit must be a positive whole number or None; got {shown(limit)}"
            )
        reason, by = check_reason(reason), check_by(by)
        counts = {"changed": 0, "requested": 0, "unchanged": 0, "unknown": 0}
        batches, done, cursor = 0, 0, None

        def outcome(complete: bool) -> BulkOutcome:
            unchanged = counts["unchanged"] + counts["unknown"]
            return BulkOutcome(
                action, counts["changed"], counts["requested"], unchanged, batches, complete
            )

        while True:
            size = batch_size if limit is None else min(batch_size, limit - done)
            page = self.list_jobs(
                queue=queue,
                name=name,
                state=state,
                created_after=created_after,
                created_before=created_before,
                cursor=cursor,
                limit=size,
            )
            if not page.items:
                return outcome(complete=True)
            with transaction.atomic(using=self.using), connections[self.using].cursor() as db:
                for row in page.items:
                    if action == "retry":
                        status = store.retry_job(db, row.id, reason, False)[0]
                    else:
                        status = store.cancel_job(db, row.id, reason, by)[0]
                    counts[status] = counts.get(status, 0) + 1
            batches += 1
            done += len(page.items)
            cursor = page.next_cursor
            if cursor is None or (limit is not None and done >= limit):
                return outcome(complete=cursor is None)

    def start_bulk(
        self,
        action: str,
        *,
        queue: str | None = None,
        name: str | None = None,
        state: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        reason: str | None = None,
        by: str | None = None,
        permission: str | None = None,
        batch_size: int = BULK_BATCH_SIZE,
    ) -> BulkAction:
        """Ask for ``retry`` or ``cancel`` of every job matching ``list_jobs``'
        filters, as a job: returns at once with the action's record (status
        ``queued``); a worker serving ``workhorse.operator`` walks the jobs,
        ``batch_size`` per transaction, and the record shows its progress
        (``bulk_action(id)``).

        Only the states the action can change are walked (failed and
        canceled for a retry; blocked, scheduled, ready and active for a
        cancel), and no job newer than the newest one now. ``by`` (who asks)
        and ``permission`` (how their right to act was checked; the Django
        admin passes the permission it checked) are recorded with it.
        While the same action on the same filter is queued or running, asking
        again returns that one (``inserted`` False) and starts nothing."""
        check_bulk_action(action)
        created_after, created_before = check_filters(
            queue, name, state, created_after, created_before
        )
        if queue == OPERATOR_QUEUE:
            raise InvalidQueryError(
                f"the queue {OPERATOR_QUEUE} holds the jobs that run operator actions: an "
                "action on every matching job does not act on them; cancel one by its id"
            )
        applies = ACTION_STATES[action]
        if state is not None and state not in applies:
            raise InvalidQueryError(
                f"a {action} changes {' and '.join(applies)} jobs only, and the filter asks "
                f"for {state} ones: there is nothing to {action}"
            )
        if (
            not isinstance(batch_size, int)
            or isinstance(batch_size, bool)
            or not 1 <= batch_size <= 1000
        ):
            raise InvalidQueryError(f"batch_size must be from 1 to 1000; got {shown(batch_size)}")
        reason, by, permission = check_reason(reason), check_by(by), check_by(permission)
        kept = get_retention().finished_jobs
        finished_before = None if kept is None else datetime.now(UTC) - timedelta(seconds=kept)
        definition = registry.get(bulk_actions.BULK_ACTION_JOB)
        with transaction.atomic(using=self.using), transaction.atomic(using=definition.using):
            with connections[self.using].cursor() as db:
                action_id, inserted = store.bulk_request(
                    db,
                    action=action,
                    states=[state] if state is not None else list(applies),
                    queue=queue,
                    name=name,
                    state=state,
                    created_after=created_after,
                    created_before=created_before,
                    reason=reason,
                    by=by,
                    permission=permission,
                    batch_size=batch_size,
                    finished_before=finished_before,
                )
            # The job's idempotency key is the action's: asking for a
            # running action again enqueues nothing new.
            definition.options(
                idempotency_key=f"{bulk_actions.BULK_ACTION_JOB}:{self.using}:{action_id}"
            ).enqueue(action_id=action_id, store=self.using)
        found = self.bulk_action(action_id)
        assert found is not None, "the action was just written"
        return dataclasses.replace(found, inserted=inserted)

    def bulk_action(self, action_id: int) -> BulkAction | None:
        """The record of a filter-wide action as it stands, or None."""
        action_id = check_job_id(action_id)
        with connections[self.using].cursor() as db:
            rows = store.bulk_actions(db, action_id=action_id)
        return bulk_actions.from_row(rows[0], self.using) if rows else None

    def bulk_actions(self, *, running_only: bool = False, limit: int = 50) -> list[BulkAction]:
        """Filter-wide actions, newest first: those queued or running, and
        those that ended within the retention window of finished jobs
        (``WORKHORSE['RETENTION']['FINISHED_JOBS']``); ``running_only`` for the first."""
        limit = check_limit(limit)
        kept = get_retention().finished_jobs
        after = None if kept is None else datetime.now(UTC) - timedelta(seconds=kept)
        with connections[self.using].cursor() as db:
            rows = store.bulk_actions(db, live_only=running_only, finished_after=after, limit=limit)
        return [bulk_actions.from_row(row, self.using) for row in rows]

    def cancel_bulk_action(self, action_id: int, *, by: str | None = None) -> ActionResult:
        """Stop a filter-wide action: a queued one at once, a running one after
        the batch it is in (the call waits for that batch to commit). The
        jobs it acted on stay as they are."""
        action_id = check_job_id(action_id)
        status, state = bulk_actions.stop(self.using, action_id, check_by(by))
        messages = {
            "changed": f"action #{action_id} is canceled; it had not started",
            "requested": (
                f"action #{action_id} stops after the batch it is in; the jobs it acted on "
                "stay as they are"
            ),
            "unchanged": f"action #{action_id} had already ended ({state})",
            "unknown": f"there is no action #{action_id}",
        }
        return ActionResult(
            "cancel_action", action_id, cast(ActionStatus, status), state, messages[status]
        )

    def bulk(
        self,
        action: str,
        job_ids: Sequence[int],
        *,
        by: str | None = None,
        reason: str | None = None,
    ) -> list[ActionResult]:
        """``retry`` or ``cancel`` each job; one result per job, in order.
        ``by`` and ``reason`` are passed to each cancel. Every argument is
        checked before the first job is touched: a bad id among good ones
        changes nothing."""
        check_bulk_action(action)
        ids = check_job_ids(job_ids)
        by, reason = check_by(by), check_reason(reason)
        if action == "retry":
            return [self.retry(job_id) for job_id in ids]
        return [self.cancel(job_id, reason, by=by) for job_id in ids]
