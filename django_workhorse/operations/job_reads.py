"""``Admin``'s reads of jobs: a job, its timeline, pages of jobs (keyset-paged,
never a COUNT(*)), counts and the failures of a window.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.core import signing
from django.db import connections

from ..core.limits import (
    shown,
    text_problem,
)
from ..core.payloads import search_problem
from ..db import snapshots, store
from ..db.snapshots import Checkpoint as Checkpoint  # (the names' old home)
from ..db.snapshots import JobDependency as JobDependency
from ..db.snapshots import JobSnapshot
from ..exceptions import InvalidCursorError, InvalidQueryError
from .admin_base import (
    BAD_CURSOR,
    AdminBase,
    check_filters,
    check_job_id,
    check_job_ids,
    check_limit,
    check_window,
    filters_key,
    is_id,
    list_cursor,
    load_cursor,
)
from .admin_results import COUNT_CAP, INT4_MAX, FailureGroup, JobRow, Page, TimelineEntry


class JobReads(AdminBase):
    """Reads of jobs (part of ``Admin``)."""

    def get_job(self, job_id: int) -> JobSnapshot | None:
        """The job's snapshot, or None when no job has this id."""
        return snapshots.read_job(self.using, check_job_id(job_id))

    def get_jobs(self, job_ids: Sequence[int]) -> list[JobSnapshot]:
        """The snapshots of the jobs of ``job_ids`` that exist, in that order,
        read in one query (without their checkpoints: ``get_job`` has them)."""
        return snapshots.read_jobs(self.using, check_job_ids(job_ids))

    def get_job_timeline(
        self, job_id: int, cursor: str | None = None, limit: int = 100
    ) -> Page[TimelineEntry]:
        """Up to ``limit`` entries of the job's history in time order (events and
        closed attempts merged, across day partitions), and the cursor of the
        next page. An unknown job has an empty timeline."""
        job_id = check_job_id(job_id)
        limit = check_limit(limit)
        after = None
        if cursor is not None:
            key = load_cursor(cursor, "workhorse.timeline")
            try:
                cursor_job, at, rank, row_id = key
                after = (datetime.fromisoformat(at), int(rank), int(row_id))
            except (TypeError, ValueError) as exc:
                raise InvalidCursorError(BAD_CURSOR.format(cursor=shown(cursor, 40))) from exc
            # Ranks and ids as workhorse_job_timeline_v1 makes them: a derived
            # row has rank -1, 2 or 3 and may have id 0.
            if cursor_job != job_id or after[1] not in (-1, 0, 1, 2, 3) or not is_id(after[2]):
                raise InvalidCursorError(BAD_CURSOR.format(cursor=shown(cursor, 40)))
        with connections[self.using].cursor() as db:
            rows = store.job_timeline(db, job_id, after, limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        next_cursor = None
        if more:
            last = rows[-1]
            next_cursor = signing.dumps(
                [job_id, last["at"].isoformat(), last["rank"], last["id"]],
                salt="workhorse.timeline",
            )
        entries = [
            TimelineEntry(
                at=r["at"],
                source=r["source"],
                kind=r["kind"],
                attempt=r["attempt"],
                worker_id=r["worker_id"],
                started_at=r["started_at"],
                finished_at=r["finished_at"],
                error=r["error"],
                data=r["data"],
            )
            for r in rows
        ]
        return Page(entries, next_cursor)

    def list_jobs(
        self,
        *,
        queue: str | None = None,
        name: str | None = None,
        state: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        idempotency_key: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
        error_type: str | None = None,
        name_prefix: str | None = None,
        payload: dict[str, Any] | None = None,
    ) -> Page[JobRow]:
        """A page of jobs, newest first, keyset-paged through ``job_query``.

        ``next_cursor`` leads to older jobs, ``previous_cursor`` to newer ones.
        ``error_type`` (with ``state`` failed or canceled) keeps the jobs whose
        error has that type; ``name_prefix`` the jobs whose name starts with
        it; ``payload`` the jobs whose payload contains that object (for
        example ``{"customer": 42}``): every job when the operator made the
        payload index, live jobs only without it (docs/admin.md, "Search").
        Every filter is validated first: a bad value raises InvalidQueryError
        (InvalidCursorError for a cursor) naming it.
        """
        if error_type is not None:
            if state not in ("failed", "canceled"):
                raise InvalidQueryError(
                    "error_type filters failed or canceled jobs: give state='failed' or "
                    f"state='canceled' with it (state is {shown(state)})"
                )
            if (
                not isinstance(error_type, str)
                or not 1 <= len(error_type) <= 200
                or text_problem(error_type, "")
            ):
                raise InvalidQueryError(
                    f"error_type is 1 to 200 characters of text, got {shown(error_type)}"
                )
        if name_prefix is not None and (
            not isinstance(name_prefix, str)
            or not 1 <= len(name_prefix) <= 200
            or text_problem(name_prefix, "")
        ):
            raise InvalidQueryError(
                f"name_prefix is 1 to 200 characters of text, got {shown(name_prefix)}"
            )
        payload_json = None
        if payload is not None:
            if not isinstance(payload, dict) or not payload:
                raise InvalidQueryError(
                    'payload is a non-empty dict of keys and values, e.g. {"customer": 42}; '
                    f"got {shown(payload)}"
                )
            problem = search_problem(payload)
            if problem:
                raise InvalidQueryError(
                    f"payload search: {problem}; no stored payload can hold that: "
                    "leave it out of the search"
                )
            try:
                payload_json = json.dumps(payload, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise InvalidQueryError(f"payload must be JSON: {exc}") from None
            if text_problem(payload_json, "") or len(payload_json) > 10_000:
                raise InvalidQueryError(
                    f"payload is at most 10,000 characters of JSON text, got {shown(payload)}"
                )
        created_after, created_before = check_filters(
            queue, name, state, created_after, created_before
        )
        if idempotency_key is not None and (
            not isinstance(idempotency_key, str)
            or not 1 <= len(idempotency_key) <= 255
            or text_problem(idempotency_key, "")
        ):
            raise InvalidQueryError(
                "an idempotency key is 1 to 255 characters without NUL or lone surrogates, "
                f"got {shown(idempotency_key)}"
            )
        limit = check_limit(limit)
        filters: dict[str, object] = {
            "queue": queue,
            "name": name,
            "state": state,
            "created_after": created_after,
            "created_before": created_before,
            "idempotency_key": idempotency_key,
            "error_type": error_type,
            "name_prefix": name_prefix,
            "payload": payload,
        }
        direction, from_id = "older", None
        if cursor is not None:
            key = load_cursor(cursor, "workhorse.jobs")
            if (
                not isinstance(key, list)
                or len(key) != 3
                or key[0] not in ("older", "newer")
                or not is_id(key[1])
                or key[2] != filters_key(filters)
            ):
                raise InvalidCursorError(BAD_CURSOR.format(cursor=shown(cursor, 40)))
            direction, from_id = key[0], key[1]
        with connections[self.using].cursor() as db:
            rows = store.list_jobs(
                db,
                queue=queue,
                name=name,
                state=state,
                created_after=created_after,
                created_before=created_before,
                before_id=from_id if direction == "older" else None,
                after_id=from_id if direction == "newer" else None,
                limit=limit + 1,
                idempotency_key=idempotency_key,
                error_type=error_type,
                name_prefix=name_prefix,
                payload_json=payload_json,
            )
        more = len(rows) > limit
        if direction == "older":
            rows = rows[:limit]
            has_older, has_newer = more, from_id is not None
        else:
            rows = rows[-limit:] if more else rows
            has_older, has_newer = True, more
        items = [JobRow(id=r.pop("job_id"), **r) for r in rows]
        older = newer = None
        if items and has_older:
            older = list_cursor("older", items[-1].id, **filters)
        if items and has_newer:
            newer = list_cursor("newer", items[0].id, **filters)
        return Page(items, older, newer)

    def failures(self, window_seconds: float | timedelta = 86400.0) -> list[FailureGroup]:
        """Jobs that ended failed within the window (default the last 24
        hours, to the hour), grouped by job name and error type, most failures
        first. Read from the failure counters the finishing statement keeps
        (docs/admin.md, "Queue statistics"): the same few rows whatever the
        number of failures."""
        window = check_window("window_seconds", window_seconds)
        with connections[self.using].cursor() as db:
            return [FailureGroup(**r) for r in store.failures(db, window)]

    def payload_search_covers_every_job(self) -> bool:
        """Whether payload search reads every job (the operator made the payload
        index) or live jobs only (docs/admin.md, "Search")."""
        with connections[self.using].cursor() as db:
            return store.payload_index_exists(db)

    def count_jobs(
        self,
        *,
        queue: str | None = None,
        name: str | None = None,
        state: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        cap: int = COUNT_CAP,
    ) -> int:
        """How many jobs match ``list_jobs``' filters, counted up to ``cap``
        (a result equal to ``cap`` means "at least that many"): the cost is
        bounded by ``cap`` index entries, never a count of all history."""
        created_after, created_before = check_filters(
            queue, name, state, created_after, created_before
        )
        if not isinstance(cap, int) or isinstance(cap, bool) or not 1 <= cap <= INT4_MAX:
            raise InvalidQueryError(
                f"cap must be a whole number from 1 to {INT4_MAX}; got {shown(cap)}"
            )
        with connections[self.using].cursor() as db:
            return store.count_jobs(
                db,
                queue=queue,
                name=name,
                state=state,
                created_after=created_after,
                created_before=created_before,
                cap=cap,
            )
