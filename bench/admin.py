"""``make bench BENCH_ARGS="admin [--admin-jobs N]"``: the operator's view at scale.

Fills the benchmark database with N jobs (default 1,000,000; 10% live,
created over 10 days of history partitions, each finished job with an
enqueued/claimed/succeeded-or-failed history and one attempt), then times,
on the server side (Django's test client in this process, so no network;
median of 20), the job list's first page, a page 1,000 pages deep, the list
filtered by ``failed``, a job page with 50 timeline entries and the queues
page. Then it triples the jobs, adding 2N created 10 to 30 days ago (more
history, the same last hour), and times the same pages again (the target:
under 100 ms each, growing by at most 20%). Last, ``workhorse_prune`` is
timed retiring one day holding N/10 finished jobs (100,000 at the default).

The ``action`` part fills N jobs afresh and times, on the server side, the
request that confirms "cancel all" over every live job (N/10: 100,000 at
the default), which only asks for the action, then runs the action's job in
this process (``run_jobs``) and reports its own rate, jobs per second.

Rows are made with set-based INSERTs rather than through enqueue: the point
is the size of the tables the pages read, and a million enqueues would take
the run's whole budget.
"""

from __future__ import annotations

import os
import statistics
import time
from datetime import timedelta

from .common import report, section

PAGES = {
    "reference: the admin's index page": "/admin/",
    "job list, first page": "/admin/django_workhorse/job/",
    "job list, deep page": None,
    "job list, state=failed": "/admin/django_workhorse/job/?state=failed",
    "job page, 50 timeline entries": None,
    "queues page": "/admin/django_workhorse/queue/",
}


def history_partitions(conn, days_back: int, days: int) -> None:
    """The history tables' day partitions from ``days_back`` days before today
    (UTC), for ``days`` days. Made with DDL as the tables' owner:
    workhorse_ensure_partitions_v1 makes only the days from yesterday on
    (docs/security.md), and the benchmark puts history further back."""
    from psycopg import sql

    rows = conn.execute(
        "SELECT p.parent, p.parent || '_p' || to_char(d, 'YYYYMMDD'),"
        "       d::timestamp AT TIME ZONE 'UTC', (d + 1)::timestamp AT TIME ZONE 'UTC'"
        " FROM unnest(ARRAY['workhorse_job_event', 'workhorse_attempt_history']) p(parent),"
        "      LATERAL (SELECT (now() AT TIME ZONE 'UTC')::date - %s + i AS d"
        "               FROM generate_series(0, %s - 1) i) days",
        [days_back, days],
    ).fetchall()
    for parent, child, start, end in rows:
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} PARTITION OF {} FOR VALUES FROM ({}) TO ({})"
            ).format(
                sql.Identifier(child), sql.Identifier(parent), sql.Literal(start), sql.Literal(end)
            )
        )


def fill(
    conn,
    jobs: int,
    days: int = 10,
    live_share: float = 0.1,
    days_ago: int = 0,
    seconds: float | None = None,
) -> None:
    """Add ``jobs`` jobs created over ``days`` days (or the last ``seconds``),
    the newest ``days_ago`` days ago, with the finish counters the finishing
    statement would have kept for them (count_finishes)."""
    span = seconds if seconds is not None else days * 86400 - 60
    history_partitions(conn, days_ago + days + 1, days_ago + days + 3)
    with conn.transaction():
        conn.execute(
            """
            CREATE TEMP TABLE bench_new ON COMMIT DROP AS
            SELECT nextval('workhorse_job_id_seq') AS id,
                   'q' || (g %% 8) AS queue,
                   'bench.job_' || (g %% 5) AS name,
                   -- 2 s before its finish: the newest finished a moment ago.
                   now() - interval '2 seconds'
                     - make_interval(secs => %s + %s * (1 - g::float8 / %s)) AS created_at,
                   (g %% 100) < %s AS live,
                   g
            FROM generate_series(1, %s) g
            """,
            [days_ago * 86400, span, jobs, int(live_share * 100), jobs],
        )
        conn.execute(
            """
            INSERT INTO workhorse_job (id, name, queue, payload, max_attempts, created_at)
            SELECT id, name, queue,
                   jsonb_build_object('n', g, 'customer', 'c' || (g % 10000)), 3, created_at
            FROM bench_new
            """
        )
        conn.execute(
            "INSERT INTO workhorse_job_query (job_id, queue, name, created_at)"
            " SELECT id, queue, name, created_at FROM bench_new"
        )
        conn.execute(
            """
            INSERT INTO workhorse_job_runtime (job_id, queue, priority, state, run_at)
            SELECT id, queue, 0, CASE WHEN g % 3 = 0 THEN 'scheduled' ELSE 'ready' END,
                   CASE WHEN g % 3 = 0 THEN now() + interval '1 day' ELSE created_at END
            FROM bench_new WHERE live
            """
        )
        conn.execute(
            """
            INSERT INTO workhorse_job_outcome (job_id, state, result, error, attempts, finished_at)
            SELECT id, CASE WHEN g % 50 = 1 THEN 'failed' ELSE 'succeeded' END,
                   CASE WHEN g % 50 = 1 THEN NULL ELSE '{"ok": true}'::jsonb END,
                   CASE WHEN g % 50 = 1 THEN '{"type": "ValueError", "message": "boom"}'::jsonb END,
                   1, created_at + interval '2 seconds'
            FROM bench_new WHERE NOT live ORDER BY created_at
            """
        )
        conn.execute(
            """
            INSERT INTO workhorse_job_event (job_id, at, kind, attempt, worker_id)
            SELECT id, created_at + interval '2 seconds', 'failed', 1, 'bench-worker'
            FROM bench_new WHERE NOT live AND g % 50 = 1
            """
        )
        conn.execute(
            """
            INSERT INTO workhorse_attempt_history
                (job_id, attempt, outcome, worker_id, started_at, finished_at)
            SELECT id, 1, CASE WHEN g % 50 = 1 THEN 'failed' ELSE 'succeeded' END,
                   'bench-worker', created_at + interval '1 second',
                   created_at + interval '2 seconds'
            FROM bench_new WHERE NOT live
            """
        )
        count_finishes(conn)
    conn.execute("VACUUM ANALYZE")


def count_finishes(conn) -> None:
    """The counters workhorse_end_runs_v1 keeps, for the finished jobs of
    bench_new: per minute and queue (two shards, as two workers' connections
    would write) and failures per hour, name and error type. Direct SQL that
    gives the rows the finishing statements would have left."""
    conn.execute(
        """
        INSERT INTO workhorse_queue_minute AS m (minute, queue, shard, succeeded, failed, canceled)
        SELECT date_trunc('minute', o.finished_at), b.queue, b.g % 2,
               count(*) FILTER (WHERE o.state = 'succeeded'),
               count(*) FILTER (WHERE o.state = 'failed'), 0
        FROM bench_new b JOIN workhorse_job_outcome o ON o.job_id = b.id
        GROUP BY 1, 2, 3
        ON CONFLICT (minute, queue, shard) DO UPDATE
        SET succeeded = m.succeeded + excluded.succeeded, failed = m.failed + excluded.failed
        """
    )
    conn.execute(
        """
        INSERT INTO workhorse_failure_hour AS f
            (hour, name, error_type, shard, failures, last_job_id, last_at)
        SELECT date_trunc('hour', o.finished_at), b.name, o.error ->> 'type', b.g % 2,
               count(*), max(b.id), max(o.finished_at)
        FROM bench_new b JOIN workhorse_job_outcome o ON o.job_id = b.id
        WHERE o.state = 'failed'
        GROUP BY 1, 2, 3, 4
        ON CONFLICT (hour, name, error_type, shard) DO UPDATE
        SET failures = f.failures + excluded.failures,
            last_job_id = greatest(f.last_job_id, excluded.last_job_id),
            last_at = greatest(f.last_at, excluded.last_at)
        """
    )


def long_history_job(conn) -> int:
    """A job with 50 stored timeline rows (25 events, 25 attempts), and the
    26 the timeline derives from them (its enqueue, 25 claims)."""
    row = conn.execute(
        "INSERT INTO workhorse_job (name, queue, payload, max_attempts, created_at)"
        " VALUES ('bench.long', 'q0', '{}', 1000, now() - interval '1 hour')"
        " RETURNING id, created_at"
    ).fetchone()
    job_id = row[0]
    conn.execute(
        "INSERT INTO workhorse_job_query (job_id, queue, name, created_at)"
        " VALUES (%s, 'q0', 'bench.long', %s)",
        [job_id, row[1]],
    )
    conn.execute(
        "INSERT INTO workhorse_job_runtime (job_id, queue, priority, state, run_at, attempt)"
        " VALUES (%s, 'q0', 0, 'scheduled', now() + interval '1 hour', 25)",
        [job_id],
    )
    conn.execute(
        """
        INSERT INTO workhorse_job_event (job_id, at, kind, attempt, worker_id, data)
        SELECT %s, now() - make_interval(secs => 100 - 2 * g), 'retry_scheduled', g, 'w',
               '{"attempt_outcome": "failed"}'
        FROM generate_series(1, 25) g
        """,
        [job_id],
    )
    conn.execute(
        """
        INSERT INTO workhorse_attempt_history
            (job_id, attempt, outcome, worker_id, started_at, finished_at, error)
        SELECT %s, g, 'failed', 'w', now() - make_interval(secs => 101 - 2 * g),
               now() - make_interval(secs => 100 - 2 * g),
               '{"type": "ValueError", "message": "boom", "traceback": "Traceback ..."}'
        FROM generate_series(1, 25) g
        """,
        [job_id],
    )
    return job_id


def time_pages(client, deep_url: str, job_url: str, runs: int = 20) -> dict[str, float]:
    urls = {name: url or (deep_url if "deep" in name else job_url) for name, url in PAGES.items()}
    return time_urls(client, urls, runs)


def time_calls(job_id: int, deep: str, runs: int = 20) -> dict[str, float]:
    """The same reads through ``Admin`` alone (the SQL, without the page)."""
    from django_workhorse import Admin

    admin = Admin()
    calls = {
        "Admin.list_jobs(), first page": lambda: admin.list_jobs(),
        "Admin.list_jobs(), deep page": lambda: admin.list_jobs(cursor=deep),
        "Admin.list_jobs(state='failed')": lambda: admin.list_jobs(state="failed"),
        "Admin.get_job_timeline(), 50 entries": lambda: admin.get_job_timeline(job_id),
        "Admin.queue_stats(count_limit=1000)": lambda: admin.queue_stats(count_limit=1000),
        "Admin.queue_stats(), exact counts": admin.queue_stats,
    }
    medians = {}
    for name, call in calls.items():
        call()
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            call()
            times.append((time.perf_counter() - start) * 1000)
        medians[name] = statistics.median(times)
    return medians


def deep_cursor(conn, pages: int, page_size: int = 50) -> str:
    from django_workhorse.admin_api import list_cursor

    top = conn.execute("SELECT max(job_id) FROM workhorse_job_query").fetchone()[0]
    return list_cursor("older", top - pages * page_size)


def run(conn, jobs: int) -> None:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from . import common

    section(f"operator's view: pages at {jobs:,} and {3 * jobs:,} jobs (server time, median of 20)")
    common.reset(conn)
    user = get_user_model().objects.filter(username="bench").first() or (
        get_user_model().objects.create_superuser("bench", "bench@example.com", "pw")
    )
    client = Client()
    client.force_login(user)
    started = time.perf_counter()
    fill(conn, jobs)
    print(f"  (filled {jobs:,} jobs in {time.perf_counter() - started:.0f} s)", flush=True)
    long_job = long_history_job(conn)
    job_url = f"/admin/django_workhorse/job/{long_job}/"
    # 1,000 pages deep at 1M jobs; proportionally less at a smaller scale.
    depth = min(1000, jobs // 100)

    def measure() -> dict[str, float]:
        deep = deep_cursor(conn, depth)
        found = time_pages(client, "/admin/django_workhorse/job/?cursor=" + deep, job_url)
        found.update(time_calls(long_job, deep))
        return found

    print(f"  (the deep page is {depth:,} pages deep)")
    first = measure()
    for name, value in first.items():
        report(f"{name} ({jobs:,} jobs)", value, "ms")
    # The history grows; the present does not: the 2N more jobs were created
    # 10 to 30 days ago (with the same share of live ones), so the last hour
    # finished as many jobs as before. What the queues page counts for "the
    # last hour" grows with that hour's traffic, by design.
    started = time.perf_counter()
    fill(conn, 2 * jobs, days=20, days_ago=10)
    print(
        f"  (filled {2 * jobs:,} more, created 10 to 30 days ago, in"
        f" {time.perf_counter() - started:.0f} s)",
        flush=True,
    )
    second = measure()
    for name, value in second.items():
        growth = (value / first[name] - 1) * 100
        report(f"{name} ({3 * jobs:,} jobs)", value, "ms", f"{growth:+.0f}% vs {jobs:,}")

    section(f"retention: one day of {jobs // 10:,} finished jobs")
    prune_day(conn, jobs // 10)


def prune_day(conn, jobs: int) -> None:
    """Put ``jobs`` finished jobs with their history on a day 40 days back, then
    time ``workhorse_prune`` retiring them (the rest of the database is at most
    30 days old)."""
    from io import StringIO

    from django.core.management import call_command
    from django.test import override_settings

    history_partitions(conn, 40, 1)
    with conn.transaction():
        conn.execute(
            """
            CREATE TEMP TABLE bench_old ON COMMIT DROP AS
            SELECT nextval('workhorse_job_id_seq') AS id,
                   ((now() AT TIME ZONE 'UTC')::date - 40)::timestamp AT TIME ZONE 'UTC'
                     + make_interval(secs => 80000 * g::float8 / %s) AS at
            FROM generate_series(1, %s) g
            """,
            [jobs, jobs],
        )
        conn.execute(
            "INSERT INTO workhorse_job (id, name, queue, payload, max_attempts, created_at)"
            " SELECT id, 'bench.old', 'old', '{}', 1, at FROM bench_old"
        )
        conn.execute(
            "INSERT INTO workhorse_job_query SELECT id, 'old', 'bench.old', at FROM bench_old"
        )
        conn.execute(
            "INSERT INTO workhorse_job_outcome (job_id, state, attempts, finished_at)"
            " SELECT id, 'succeeded', 1, at + interval '1 second' FROM bench_old ORDER BY at"
        )
        conn.execute(
            "INSERT INTO workhorse_attempt_history (job_id, attempt, outcome, worker_id,"
            " started_at, finished_at) SELECT id, 1, 'succeeded', 'w', at, at FROM bench_old"
        )
    conn.execute("VACUUM ANALYZE workhorse_job_outcome")
    out = StringIO()
    # The rest of the database spans 30 days: a 35-day window retires the old day only.
    window = {"HISTORY": timedelta(days=35), "FINISHED_JOBS": timedelta(days=35)}
    with override_settings(WORKHORSE={"RETENTION": window}):
        start = time.perf_counter()
        call_command("workhorse_prune", stdout=out)
        elapsed = time.perf_counter() - start
    left = conn.execute("SELECT count(*) FROM workhorse_job WHERE queue = 'old'").fetchone()[0]
    report(
        "workhorse_prune, one old day",
        elapsed,
        "s",
        f"{jobs:,} jobs, {left} left; " + out.getvalue().strip().replace("\n", "; "),
    )


HOUR_PAGES = {
    "queues page": "/admin/django_workhorse/queue/",
    "job list, first page (with its 8 state counts)": "/admin/django_workhorse/job/",
    "job list, state=failed": "/admin/django_workhorse/job/?state=failed",
    "job list, queue=q3 and state=succeeded": (
        "/admin/django_workhorse/job/?queue=q3&state=succeeded"
    ),
    "failures view, last 24 h": "/admin/django_workhorse/job/failures/",
    "failures view's link (name, failed, error type)": (
        "/admin/django_workhorse/job/?state=failed&name=bench.job_1&error_type=ValueError"
    ),
    "workers view": "/admin/django_workhorse/queue/workers/",
    "search: name prefix 'bench.job_3'": "/admin/django_workhorse/job/?prefix=bench.job_3",
    "search: payload customer=c42, live jobs only (no index)": (
        "/admin/django_workhorse/job/?payload=customer%3Dc42"
    ),
    "cancel-all confirmation: count of queue=q5 state=ready": (
        "/admin/django_workhorse/job/act/all/?action=cancel&queue=q5&state=ready"
    ),
    "cancel-all confirmation: count of queue=q5, every state it cancels": (
        "/admin/django_workhorse/job/act/all/?action=cancel&queue=q5"
    ),
    "retry-all confirmation: count of queue=q5, failed and canceled": (
        "/admin/django_workhorse/job/act/all/?action=retry&queue=q5"
    ),
}
"""The pages timed with a busy last hour."""

INDEXED_SEARCH = {
    "search: payload customer=c42, every job (GIN index)": (
        "/admin/django_workhorse/job/?payload=customer%3Dc42"
    ),
    "search: payload customer=c42 and state=succeeded (GIN index)": (
        "/admin/django_workhorse/job/?payload=customer%3Dc42&state=succeeded"
    ),
}
"""Payload search once the operator made the index (docs/admin.md, "Search")."""


def time_urls(client, urls: dict[str, str], runs: int = 20) -> dict[str, float]:
    medians = {}
    for name, url in urls.items():
        client.get(url)  # warm the plan caches and templates
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200, (url, response.status_code)
        medians[name] = statistics.median(times)
    return medians


def time_once(conn, sql: str, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        conn.execute(sql).fetchall()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


OUTCOMES_OF_THE_HOUR = """
    SELECT q.queue, o.state, count(*)
    FROM workhorse_job_outcome o
    CROSS JOIN LATERAL (
        SELECT q.queue FROM workhorse_job_query q WHERE q.job_id = o.job_id OFFSET 0
    ) q
    WHERE o.finished_at > now() - interval '1 hour'
    GROUP BY 1, 2
"""
"""How the queue statistics were counted before the finish counters: every
outcome of the window, and a probe of its queue each (for reference)."""


def run_hour(conn, jobs: int) -> None:
    """The queues page (and the other operator's reads) with ``jobs`` jobs
    finished in the last hour, then with none finished in it."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from . import common

    section(
        f"operator's view with {jobs:,} jobs finished in the last hour, then none"
        " (server time, median of 20)"
    )
    common.reset(conn)
    user = get_user_model().objects.filter(username="bench").first() or (
        get_user_model().objects.create_superuser("bench", "bench@example.com", "pw")
    )
    client = Client()
    client.force_login(user)
    started = time.perf_counter()
    fill(conn, jobs, seconds=3600 - 300, live_share=0.0)
    fill(conn, jobs // 10, seconds=3600 - 300, live_share=1.0)
    print(
        f"  (filled {jobs:,} jobs finished in the last hour and {jobs // 10:,} live ones in"
        f" {time.perf_counter() - started:.0f} s)",
        flush=True,
    )
    finished = conn.execute(
        "SELECT sum(succeeded + failed + canceled) FROM workhorse_queue_minute"
        " WHERE minute > now() - interval '61 minutes'"
    ).fetchone()[0]
    print(f"  (the counters say {finished:,} finished in the last hour)")

    def status_ms() -> float:
        times = []
        for _ in range(5):
            start = time.perf_counter()
            call_command("workhorse_status", "--json", stdout=open(os.devnull, "w"))  # noqa: SIM115
            times.append((time.perf_counter() - start) * 1000)
        return statistics.median(times)

    busy = time_urls(client, HOUR_PAGES)
    for name, value in busy.items():
        report(f"{name} ({jobs:,} finished in the hour)", value, "ms")
    report(f"workhorse_status --json ({jobs:,} in the hour)", status_ms(), "ms", "median of 5")
    report(
        "reference: reading the hour's outcomes (the way before)",
        time_once(conn, OUTCOMES_OF_THE_HOUR),
        "ms",
        "median of 3",
    )
    started = time.perf_counter()
    conn.execute(
        "CREATE INDEX workhorse_job_payload_gin ON workhorse_job USING gin (payload jsonb_path_ops)"
    )
    conn.execute("ANALYZE workhorse_job")
    report(
        f"making the payload index (GIN, {jobs + jobs // 10:,} jobs)",
        time.perf_counter() - started,
        "s",
        "CREATE INDEX, not CONCURRENTLY",
    )
    for name, value in time_urls(client, INDEXED_SEARCH).items():
        report(f"{name} ({jobs:,} in the hour)", value, "ms")
    # The same database, with the hour's counters moved two hours back: the
    # tables are as large, nothing finished in the window.
    conn.execute("UPDATE workhorse_queue_minute SET minute = minute - interval '2 hours'")
    conn.execute("VACUUM ANALYZE workhorse_queue_minute")
    quiet = time_urls(client, {"queues page": HOUR_PAGES["queues page"]})
    report("queues page (0 finished in the hour)", quiet["queues page"], "ms")
    report("workhorse_status --json (0 in the hour)", status_ms(), "ms", "median of 5")
    # The growth part measures without it, as a default install has it.
    conn.execute("DROP INDEX workhorse_job_payload_gin")
    # Last (it changes the data): a filter-wide cancel of one queue's ready jobs.
    from django_workhorse import Admin

    admin = Admin()
    count = admin.count_jobs(queue="q5", state="ready", cap=1_000_000)
    started = time.perf_counter()
    outcome = admin.bulk_matching("cancel", queue="q5", state="ready", reason="bench")
    elapsed = time.perf_counter() - started
    report(
        f"Admin.bulk_matching('cancel'), {count:,} ready jobs of one queue",
        elapsed,
        "s",
        f"{outcome.changed:,} canceled in {outcome.batches} transactions;"
        f" {elapsed / max(outcome.changed, 1) * 1000:.2f} ms a job",
    )


def run_action(conn, jobs: int) -> None:
    """Confirming "cancel all" over the N/10 live jobs of N (the request time),
    then the action run to its end by its job in this process (its rate)."""
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django_workhorse.bulk_actions import OPERATOR_QUEUE

    from django_workhorse import Admin
    from django_workhorse.testing import run_jobs

    from . import common

    section(f"operator's view: cancel all over the live jobs of {jobs:,} (a job of its own)")
    common.reset(conn)
    user = get_user_model().objects.filter(username="bench").first() or (
        get_user_model().objects.create_superuser("bench", "bench@example.com", "pw")
    )
    client = Client()
    client.force_login(user)
    started = time.perf_counter()
    fill(conn, jobs)
    print(f"  (filled {jobs:,} jobs in {time.perf_counter() - started:.0f} s)", flush=True)
    admin = Admin()
    live = sum(
        admin.count_jobs(state=state, cap=10 * jobs)
        for state in ("blocked", "scheduled", "ready", "active")
    )
    # A first request loads what every later one finds ready (URLs, templates,
    # the job registry): an action on a queue with no job, stopped at once.
    client.post("/admin/django_workhorse/job/act/all/", {"action": "cancel", "queue": "none"})
    admin.cancel_bulk_action(admin.bulk_actions()[0].id)
    started = time.perf_counter()
    response = client.post("/admin/django_workhorse/job/act/all/", {"action": "cancel"})
    asked_ms = (time.perf_counter() - started) * 1000
    assert response.status_code == 302, response.status_code
    action = admin.bulk_actions()[0]
    report(
        f"confirming cancel all over {live:,} live jobs ({jobs:,} jobs)",
        asked_ms,
        "ms",
        f"the request asks; action #{action.id} is {action.status}",
    )
    started = time.perf_counter()
    run_jobs(queues=[OPERATOR_QUEUE])
    elapsed = time.perf_counter() - started
    done = admin.bulk_action(action.id)
    assert done is not None and done.status == "finished", done
    report(
        "the action's own rate (its job, run in this process)",
        done.rate or 0.0,
        "jobs/s",
        f"{done.changed:,} canceled in {done.batches} batches, {elapsed:.1f} s;"
        f" {elapsed / max(done.matched, 1) * 1000:.2f} ms a job",
    )
