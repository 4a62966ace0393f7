"""Many workers claiming at once never hand one job to two owners."""

import random
import threading
from collections import Counter

import pytest
from demo.jobs import add

from django_workhorse.db import store

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])

JOBS = 2_000
WORKERS = 8


def test_eight_workers_claim_two_thousand_jobs_without_a_double_claim(pg_connect, db_rows):
    handles = add.options(queue="race").enqueue_many([{"a": i, "b": i} for i in range(JOBS)])
    connections = [pg_connect() for _ in range(WORKERS)]
    start = threading.Barrier(WORKERS)
    claimed: dict[str, list[int]] = {}
    errors: list[BaseException] = []

    def work(index: int) -> None:
        worker, rng, mine = f"racer-{index}", random.Random(index), []
        claimed[worker] = mine
        try:
            with connections[index].cursor() as cur:
                start.wait(timeout=30)
                while batch := store.claim_many(cur, worker, ["race"], [rng.randint(1, 50)], 60):
                    mine.extend(job.job_id for job in batch)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []

    handed_out = Counter(job_id for ids in claimed.values() for job_id in ids)
    assert [job_id for job_id, times in handed_out.items() if times > 1] == []
    assert set(handed_out) == {h.id for h in handles}
    assert sum(1 for ids in claimed.values() if ids) > 1, "the claims did not overlap"

    owner = {job_id: worker for worker, ids in claimed.items() for job_id in ids}
    db_rows.cursor.execute("SELECT job_id, worker_id, state, fence FROM workhorse_job_runtime")
    rows = db_rows.cursor.fetchall()
    assert len(rows) == JOBS
    assert all(state == "active" and fence == 1 for _, _, state, fence in rows)
    assert {job_id: worker for job_id, worker, _, _ in rows} == owner
