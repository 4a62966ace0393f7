"""Any sequence of lifecycle operations keeps the store's invariants.

Hypothesis drives enqueue, claim, heartbeat, succeed, fail (or a worker's
ack of a cancel), release, recovery, an operator's cancel, the enqueue of
jobs that depend on others, checkpoint writes and durable sleeps in random
order, by several workers, and replays old (worker, fence) tickets on
purpose. A small model predicts what each call must report, including how an
end settles blocked dependents (released, canceled, or still waiting with one
prerequisite fewer, down the graph); after every step the database must hold:

* exactly one runtime row or one outcome row per job, never both, never neither;
* fences that never go backwards, and attempts within max_attempts;
* the state, attempt, stall count and owner the model predicts, and for a
  blocked job the number of prerequisites it still waits for;
* the checkpoints and sleeps the model predicts (only a ticket's current
  holder can add one; a sleep gives its attempt back).

A refused call (a stale or forged ticket) must report the lost lease and
leave the job's rows and history exactly as they were.

Every statement runs in its own transaction (autocommit), so a claim with a
lease of 0 seconds has expired by the next statement and recovery takes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from demo.jobs import add
from django.db import connection
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    multiple,
    rule,
    run_state_machine_as_test,
)

from django_workhorse import Admin
from django_workhorse.db import store

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])

QUEUE = "stateful"
WORKERS = ("worker-1", "worker-2", "worker-3")
MAX_STALLED = 1
ERROR = json.dumps({"type": "RuntimeError", "message": "planned"})


@dataclass
class ModelJob:
    """What the store must hold for one job."""

    max_attempts: int
    state: str = "ready"
    attempt: int = 0
    stall_count: int = 0
    owner: tuple[str, int] | None = None
    lease_expired: bool = False
    depends_on: tuple[int, ...] = ()
    policy: str = "all_succeeded"
    pending: int = 0
    cancel_requested: bool = False
    checkpoints: dict[str, str] = field(default_factory=dict)
    """name → kind ('checkpoint' or 'sleep') of what the job recorded."""


@dataclass(frozen=True)
class Ticket:
    """A claim as a worker remembers it; stale once the job moved on."""

    job_id: int
    worker: str
    fence: int


TERMINAL = ("succeeded", "failed", "canceled")
tampering = st.sampled_from(["as-issued", "other-worker", "next-fence", "previous-fence"])


class JobLifecycle(RuleBasedStateMachine):
    tickets = Bundle("tickets")
    rows = None  # the DbRows fixture, set by the test

    def __init__(self) -> None:
        super().__init__()
        self.cursor = connection.cursor()
        self.rows.delete_all()
        self.jobs: dict[int, ModelJob] = {}
        self.highest_fence: dict[int, int] = {}

    def teardown(self) -> None:
        self.cursor.close()

    # -- helpers --------------------------------------------------------------

    def presented(self, ticket: Ticket, tamper: str) -> tuple[str, int]:
        """The (worker, fence) a call presents: the ticket, or a forgery of it."""
        if tamper == "other-worker":
            return "intruder", ticket.fence
        if tamper == "next-fence":
            return ticket.worker, ticket.fence + 1
        if tamper == "previous-fence":
            return ticket.worker, ticket.fence - 1
        return ticket.worker, ticket.fence

    def owns(self, job_id: int, worker: str, fence: int) -> bool:
        job = self.jobs[job_id]
        return job.state == "active" and job.owner == (worker, fence)

    def settle(self, ended: list[int], only: set[int] | None = None) -> None:
        """What workhorse_settle_dependents_v1 must do after ``ended`` ended."""
        while ended:
            canceled = []
            for job_id, job in sorted(self.jobs.items()):
                if job.state != "blocked" or (only is not None and job_id not in only):
                    continue
                hits = [self.jobs[p].state for p in job.depends_on if p in ended]
                if not hits:
                    continue
                succeeded, left = hits.count("succeeded"), job.pending - len(hits)
                if job.policy == "any_succeeded":
                    verdict = "release" if succeeded else ("cancel" if left <= 0 else "wait")
                elif job.policy == "all_finished":
                    verdict = "release" if left <= 0 else "wait"
                else:
                    verdict = (
                        "cancel" if succeeded < len(hits) else "release" if left <= 0 else "wait"
                    )
                event(f"dependent: {job.policy} {verdict}")
                job.pending = max(left, 0)
                if verdict == "release":
                    job.state = "ready"
                elif verdict == "cancel":
                    job.state = "canceled"
                    canceled.append(job_id)
            ended, only = canceled, None

    def refused_without_a_trace(self, job_id: int, call) -> None:
        event("refused a stale or forged ticket")
        before = self.rows.fingerprint(job_id)
        assert call() is False, "a stale (worker, fence) was accepted"
        assert self.rows.fingerprint(job_id) == before, "a refused call changed the job"

    # -- rules ----------------------------------------------------------------

    @rule(
        count=st.integers(1, 3),
        max_attempts=st.integers(1, 3),
        priority=st.integers(-2, 2),
    )
    def enqueue(self, count: int, max_attempts: int, priority: int) -> None:
        handles = add.options(
            queue=QUEUE, max_attempts=max_attempts, priority=priority, max_stalled=MAX_STALLED
        ).enqueue_many([{"a": i, "b": i} for i in range(count)])
        for handle in handles:
            assert handle.inserted
            self.jobs[handle.id] = ModelJob(max_attempts=max_attempts)

    @rule(
        data=st.data(),
        policy=st.sampled_from(["all_succeeded", "all_finished", "any_succeeded"]),
        on_live=st.booleans(),
    )
    def enqueue_dependent(self, data, policy: str, on_live: bool) -> None:
        """A job depending on 1 to 3 jobs: live ones mostly, so that their
        ends settle it later; any job (ended ones count at once) otherwise."""
        live = sorted(j for j, job in self.jobs.items() if job.state not in TERMINAL)
        ids = live if on_live and live else sorted(self.jobs)
        if not ids:
            return
        depends_on = tuple(sorted(data.draw(st.sets(st.sampled_from(ids), min_size=1, max_size=3))))
        (handle,) = add.options(
            queue=QUEUE, max_attempts=2, max_stalled=MAX_STALLED,
            depends_on=depends_on, dependency_policy=policy,
        ).enqueue_many([{"a": 0, "b": 0}])  # fmt: skip
        job = ModelJob(
            max_attempts=2,
            state="blocked",
            depends_on=depends_on,
            policy=policy,
            pending=len(depends_on),
        )
        self.jobs[handle.id] = job
        ended = [p for p in depends_on if self.jobs[p].state in TERMINAL]
        self.settle(ended, only={handle.id})

    @rule(
        target=tickets,
        worker=st.sampled_from(WORKERS),
        limit=st.integers(1, 3),
        expiring=st.booleans(),
    )
    def claim(self, worker: str, limit: int, expiring: bool):
        ready = [job_id for job_id, job in self.jobs.items() if job.state == "ready"]
        claimed = store.claim_many(self.cursor, worker, [QUEUE], [limit], 0 if expiring else 60)
        assert len(claimed) == min(limit, len(ready))
        issued = []
        for c in claimed:
            job = self.jobs[c.job_id]
            assert job.state == "ready", f"claimed a job the model holds as {job.state}"
            assert c.attempt == job.attempt + 1
            assert c.fence > self.highest_fence.get(c.job_id, 0), "a claim reused a fence"
            assert c.max_attempts == job.max_attempts
            job.state, job.attempt, job.owner = "active", c.attempt, (worker, c.fence)
            job.lease_expired = expiring
            self.highest_fence[c.job_id] = c.fence
            issued.append(Ticket(c.job_id, worker, c.fence))
        return multiple(*issued)

    @rule(ticket=tickets, tamper=tampering)
    def heartbeat(self, ticket: Ticket, tamper: str) -> None:
        worker, fence = self.presented(ticket, tamper)

        def call() -> bool:
            ((job_id, renewed, cancel),) = store.heartbeat_many(
                self.cursor, worker, [ticket.job_id], [fence], 60
            )
            assert job_id == ticket.job_id
            assert cancel is (renewed and self.jobs[ticket.job_id].cancel_requested)
            return renewed

        if not self.owns(ticket.job_id, worker, fence):
            self.refused_without_a_trace(ticket.job_id, call)
            return
        assert call() is True
        self.jobs[ticket.job_id].lease_expired = False

    @rule(ticket=tickets, tamper=tampering)
    def succeed(self, ticket: Ticket, tamper: str) -> None:
        worker, fence = self.presented(ticket, tamper)

        def call() -> bool:
            ((_, ok),) = store.succeed_many(
                self.cursor, worker, [ticket.job_id], [fence], ['{"done": true}']
            )
            return ok

        if not self.owns(ticket.job_id, worker, fence):
            self.refused_without_a_trace(ticket.job_id, call)
            return
        assert call() is True
        job = self.jobs[ticket.job_id]
        job.state, job.owner = "succeeded", None
        self.settle([ticket.job_id])

    @rule(
        ticket=tickets,
        tamper=tampering,
        retryable=st.booleans(),
        delay=st.sampled_from([0.0, 3600.0]),
        kind=st.sampled_from(["failed", "failed", "canceled"]),
    )
    def fail(self, ticket: Ticket, tamper: str, retryable: bool, delay: float, kind: str) -> None:
        worker, fence = self.presented(ticket, tamper)

        def call() -> store.FailResult:
            (result,) = store.fail_many(
                self.cursor, worker, [ticket.job_id], [fence], [ERROR], [kind],
                [retryable], [delay],
            )  # fmt: skip
            return result

        if not self.owns(ticket.job_id, worker, fence):
            self.refused_without_a_trace(ticket.job_id, lambda: call().ok)
            return
        result = call()
        job = self.jobs[ticket.job_id]
        budget = retryable and job.attempt < job.max_attempts
        canceled = kind == "canceled" or (job.cancel_requested and budget)
        will_retry = budget and not canceled and not job.cancel_requested
        assert (result.ok, result.will_retry, result.attempt) == (True, will_retry, job.attempt)
        assert result.canceled is canceled
        event(f"{kind}: will_retry={will_retry}, canceled={canceled}")
        job.owner, job.cancel_requested = None, False
        if canceled:
            job.state = "canceled"
            self.settle([ticket.job_id])
        elif not will_retry:
            job.state = "failed"
            self.settle([ticket.job_id])
        else:
            job.state = "ready" if delay == 0 else "scheduled"

    @rule(ticket=tickets, tamper=tampering)
    def release(self, ticket: Ticket, tamper: str) -> None:
        worker, fence = self.presented(ticket, tamper)

        def call() -> tuple[bool, bool]:
            ((_, ok, canceled),) = store.release_many(self.cursor, worker, [ticket.job_id], [fence])
            return ok, canceled

        if not self.owns(ticket.job_id, worker, fence):
            self.refused_without_a_trace(ticket.job_id, lambda: call()[0])
            return
        job = self.jobs[ticket.job_id]
        assert call() == (True, job.cancel_requested)
        if job.cancel_requested:  # a release would undo the cancel
            job.state, job.owner, job.cancel_requested = "canceled", None, False
            self.settle([ticket.job_id])
        else:
            job.state, job.attempt, job.owner = "ready", job.attempt - 1, None

    @rule(ticket=tickets, tamper=tampering, name=st.sampled_from(["one", "two"]))
    def checkpoint(self, ticket: Ticket, tamper: str, name: str) -> None:
        worker, fence = self.presented(ticket, tamper)

        def call() -> bool:
            ok, cancel = store.write_checkpoint(
                self.cursor, ticket.job_id, worker, fence, name, '{"stage": true}'
            )
            # A refused write tells nothing; a written one carries the
            # operator's cancel request to the run.
            assert cancel is (ok and self.jobs[ticket.job_id].cancel_requested)
            return ok

        if not self.owns(ticket.job_id, worker, fence):
            self.refused_without_a_trace(ticket.job_id, call)
            return
        assert call() is True
        self.jobs[ticket.job_id].checkpoints[name] = "checkpoint"

    @rule(
        ticket=tickets,
        tamper=tampering,
        name=st.sampled_from(["nap", "two"]),
        delay=st.sampled_from([0.0, 3600.0]),
    )
    def sleep(self, ticket: Ticket, tamper: str, name: str, delay: float) -> None:
        worker, fence = self.presented(ticket, tamper)

        def call() -> bool:
            ((_, ok, _, canceled),) = store.sleep_many(
                self.cursor, worker, [ticket.job_id], [fence], [name], [None], [delay]
            )
            assert canceled is (ok and self.jobs[ticket.job_id].cancel_requested)
            return ok

        if not self.owns(ticket.job_id, worker, fence):
            self.refused_without_a_trace(ticket.job_id, call)
            return
        assert call() is True
        job = self.jobs[ticket.job_id]
        if job.cancel_requested:  # a sleep would leave the cancel waiting
            event("sleep ended canceled")
            job.state, job.owner, job.cancel_requested = "canceled", None, False
            self.settle([ticket.job_id])
            return
        event(f"slept {delay:.0f} s")
        job.state = "ready" if delay == 0 else "scheduled"
        job.attempt, job.owner = job.attempt - 1, None
        job.checkpoints[name] = "sleep"

    @rule()
    def recover(self) -> None:
        expired = {
            job_id
            for job_id, job in self.jobs.items()
            if job.state == "active" and job.lease_expired
        }
        recovered = store.recover_stalled(self.cursor)
        assert {r.job_id for r in recovered} == expired
        event(f"recovered {'some' if recovered else 'none'}")
        ended = []
        for r in sorted(recovered, key=lambda r: r.job_id):
            job = self.jobs[r.job_id]
            job.stall_count += 1
            assert (r.attempt, r.stall_count) == (job.attempt, job.stall_count)
            assert r.canceled == job.cancel_requested
            assert r.failed == (job.stall_count > MAX_STALLED and not job.cancel_requested)
            job.owner = None
            if r.canceled:
                job.state, job.cancel_requested = "canceled", False
                ended.append(r.job_id)
            elif r.failed:
                job.state = "failed"
                ended.append(r.job_id)
            else:
                job.state, job.attempt = "ready", job.attempt - 1
        self.settle(ended)

    @rule(data=st.data())
    def cancel(self, data) -> None:
        if not self.jobs:
            return
        job_id = data.draw(st.sampled_from(sorted(self.jobs)))
        job = self.jobs[job_id]
        result = Admin().cancel(job_id)
        if job.state in ("succeeded", "failed", "canceled"):
            assert (result.status, result.state) == ("unchanged", job.state)
        elif job.state == "active":
            assert (result.status, result.state) == ("requested", "active")
            job.cancel_requested = True
        else:
            assert (result.status, result.state) == ("changed", "canceled")
            job.state = "canceled"
            self.settle([job_id])
        event(f"cancel: {result.status}")

    # -- invariants (one query per step keeps the run short) ----------------

    @invariant()
    def the_store_keeps_its_invariants_and_matches_the_model(self) -> None:
        self.cursor.execute(
            """
            SELECT j.id, j.max_attempts, rt.job_id IS NOT NULL, o.job_id IS NOT NULL,
                   coalesce(rt.state, o.state), coalesce(rt.attempt, o.attempts),
                   coalesce(rt.stall_count, o.stall_count), rt.worker_id, rt.fence,
                   rt.pending_dependencies
            FROM workhorse_job j
            LEFT JOIN workhorse_job_runtime rt ON rt.job_id = j.id
            LEFT JOIN workhorse_job_outcome o ON o.job_id = j.id
            """
        )
        rows = self.cursor.fetchall()
        assert len(rows) == len(self.jobs)
        for row in rows:
            job_id, max_attempts, live, terminal, state, attempt, stalls, worker, fence = row[:9]
            # Three rows, one truth: a runtime row or an outcome row, never both or neither.
            assert live != terminal, f"job {job_id}: runtime row {live}, outcome row {terminal}"
            # Attempts never exceed the budget.
            assert 0 <= attempt <= max_attempts
            # Fences never go backwards.
            if live:
                assert fence >= self.highest_fence.get(job_id, 0)
                self.highest_fence[job_id] = fence
            # The store holds what the model predicts.
            job = self.jobs[job_id]
            assert (state, attempt, stalls) == (job.state, job.attempt, job.stall_count)
            assert (worker, fence) == job.owner if state == "active" else worker is None
            if state == "blocked":
                assert row[9] == job.pending, f"job {job_id}: pending {row[9]}, model {job.pending}"
        # Checkpoints and sleeps are what the holders of the jobs recorded.
        self.cursor.execute("SELECT job_id, name, kind FROM workhorse_job_checkpoint")
        recorded = {(job_id, name): kind for job_id, name, kind in self.cursor.fetchall()}
        assert recorded == {
            (job_id, name): kind
            for job_id, job in self.jobs.items()
            for name, kind in job.checkpoints.items()
        }
        # No foreign key ties the split rows to the job: the functions must.
        self.cursor.execute(
            """
            SELECT count(*) FROM (
                SELECT job_id FROM workhorse_job_runtime
                UNION ALL SELECT job_id FROM workhorse_job_outcome
                UNION ALL SELECT job_id FROM workhorse_job_query
            ) split WHERE NOT EXISTS (SELECT 1 FROM workhorse_job j WHERE j.id = split.job_id)
            """
        )
        assert self.cursor.fetchone()[0] == 0, "a runtime, outcome or query row has no job"


def test_any_sequence_of_operations_keeps_the_store_consistent(db_rows):
    class Lifecycle(JobLifecycle):
        rows = db_rows

    run_state_machine_as_test(
        Lifecycle,
        settings=settings(
            max_examples=20,
            stateful_step_count=25,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
