"""The operator's console pages: queue limits from the queues page, cancel
with a confirmation and a reason, actions on every job a filter matches,
counts per state, the error column, the failures view, search by name
prefix and by payload, and the opt-in auto-refresh."""

from __future__ import annotations

import pytest
from demo.jobs import add
from django.db import connection
from django.test import Client

from django_workhorse import Admin
from django_workhorse.operations.bulk_actions import OPERATOR_QUEUE
from django_workhorse.testing import run_jobs
from tests.factories import ActiveJobFactory, FailedJobFactory, ReadyJobFactory

pytestmark = pytest.mark.django_db

JOBS = "/admin/django_workhorse/job/"
QUEUES = "/admin/django_workhorse/queue/"


def limits_of(name: str):
    (stats,) = [q for q in Admin().queue_stats() if q.name == name]
    return stats.concurrency_limit, stats.rate_limit, stats.rate_period


def test_the_queues_page_sets_and_clears_a_queues_limits(operator_client):
    ReadyJobFactory(queue="limited")

    response = operator_client.post(
        f"{QUEUES}act/",
        {
            "action": "set_limits",
            "queue": "limited",
            "concurrency": "3",
            "rate": "10",
            "period": "60",
        },
        follow=True,
    )
    assert limits_of("limited") == (3, 10, 60.0)
    assert "limits set to 3 at once, 10 per" in response.content.decode()
    body = operator_client.get(QUEUES).content.decode()
    assert 'name="concurrency" min="1" max="100000" value="3"' in body

    operator_client.post(f"{QUEUES}act/", {"action": "clear_limits", "queue": "limited"})
    assert limits_of("limited") == (None, None, None)


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"concurrency": "lots"}, "concurrency must be a whole number"),
        ({"rate": "10"}, "a rate limit needs both"),
        ({"concurrency": "0"}, "concurrency"),
    ],
)
def test_a_bad_limit_is_refused_with_a_message_and_changes_nothing(operator_client, form, message):
    ReadyJobFactory(queue="limits-typo")

    response = operator_client.post(
        f"{QUEUES}act/", {"action": "set_limits", "queue": "limits-typo", **form}, follow=True
    )

    assert response.status_code == 200 and message in response.content.decode()
    assert limits_of("limits-typo") == (None, None, None)


def test_cancel_asks_first_and_keeps_the_reason(operator_client):
    job = ReadyJobFactory()

    page = operator_client.get(f"{JOBS}{job.id}/").content.decode()
    assert f'href="{JOBS}{job.id}/cancel/"' in page and 'value="cancel"' not in page
    confirm = operator_client.get(f"{JOBS}{job.id}/cancel/").content.decode()
    assert "Yes, cancel job" in confirm and 'name="reason"' in confirm
    assert Admin().get_job(job.id).state == "ready"

    operator_client.post(f"{JOBS}{job.id}/act/", {"action": "cancel", "reason": "duplicate order"})

    snapshot = Admin().get_job(job.id)
    assert snapshot.state == "canceled"
    assert (snapshot.error["reason"], snapshot.error["by"]) == ("duplicate order", "operator")


def test_a_view_only_user_gets_403_on_the_new_actions(viewer_client):
    job = ReadyJobFactory(queue="viewer-only")

    assert viewer_client.get(f"{JOBS}{job.id}/cancel/").status_code == 403
    assert viewer_client.get(f"{JOBS}act/all/", {"action": "cancel"}).status_code == 403
    assert viewer_client.post(f"{JOBS}act/all/", {"action": "cancel"}).status_code == 403
    queue_form = {"action": "set_limits", "queue": "viewer-only", "concurrency": "1"}
    assert viewer_client.post(f"{QUEUES}act/", queue_form).status_code == 403
    assert Admin().get_job(job.id).state == "ready"
    assert limits_of("viewer-only") == (None, None, None)


def test_every_job_a_filter_matches_is_counted_then_canceled(operator_client):
    add.options(queue="flood").enqueue_many([{"a": i, "b": 0} for i in range(30)])
    other = ReadyJobFactory(queue="not-flood")

    confirm = operator_client.get(
        f"{JOBS}act/all/", {"action": "cancel", "queue": "flood", "state": "ready"}
    ).content.decode()
    assert "<strong>30</strong> job(s) match" in confirm
    assert Admin().count_jobs(queue="flood", state="ready") == 30

    response = operator_client.post(
        f"{JOBS}act/all/",
        {"action": "cancel", "queue": "flood", "state": "ready", "reason": "flood"},
        follow=True,
    )

    assert 'id="wh-action-status">queued' in response.content.decode()
    run_jobs(queues=[OPERATOR_QUEUE])
    page = operator_client.get(response.redirect_chain[-1][0]).content.decode()
    assert 'id="wh-action-changed">30<' in page and 'id="wh-action-status">finished' in page
    assert Admin().count_jobs(queue="flood", state="canceled") == 30
    assert Admin().get_job(other.id).state == "ready"


@pytest.mark.parametrize(
    "query",
    [
        {"action": "delete"},
        {"action": "cancel", "state": "done"},
        {"action": "retry", "queue": "a b"},
    ],
)
def test_a_malformed_filter_wide_request_gets_a_message_not_an_error(operator_client, query):
    response = operator_client.get(f"{JOBS}act/all/", query, follow=True)
    assert response.status_code == 200
    assert list(response.context["messages"])


def test_the_job_list_counts_each_state_of_its_filter(operator_client):
    FailedJobFactory(queue="tally")
    for _ in range(2):
        ReadyJobFactory(queue="tally")

    response = operator_client.get(JOBS, {"queue": "tally"})

    counts = {link["state"]: link["count"] for link in response.context["state_links"]}
    assert (counts["all"], counts["ready"], counts["failed"], counts["succeeded"]) == (
        "3",
        "2",
        "1",
        "0",
    )


def test_failed_jobs_show_their_error_and_a_support_user_sees_its_type_only(operator, support):
    FailedJobFactory(
        queue="errors-col", error={"type": "builtins.KeyError", "message": "no key 'vip'"}
    )

    operator_client, support_client = Client(), Client()
    operator_client.force_login(operator)
    support_client.force_login(support)

    full = operator_client.get(JOBS, {"queue": "errors-col"}).content.decode()
    short = support_client.get(JOBS, {"queue": "errors-col"}).content.decode()

    assert "builtins.KeyError: no key &#x27;vip&#x27;" in full
    assert "builtins.KeyError" in short and "vip" not in short


def test_the_failures_view_groups_the_days_failures_and_links_to_them(operator_client):
    for _ in range(2):
        FailedJobFactory(queue="fv", error={"type": "builtins.TimeoutError", "message": "slow"})
    FailedJobFactory(queue="fv", error={"type": "builtins.KeyError", "message": "k"})

    response = operator_client.get(f"{JOBS}failures/")

    groups = [
        (r["group"].name, r["group"].error_type, r["group"].failures)
        for r in response.context["rows"]
    ]
    assert groups == [
        ("demo.jobs.add", "builtins.TimeoutError", 2),
        ("demo.jobs.add", "builtins.KeyError", 1),
    ]
    link = response.context["rows"][0]["jobs_url"]
    listed = operator_client.get(link).context["page"].items
    assert [j.error_type for j in listed] == ["builtins.TimeoutError"] * 2


def test_search_by_name_prefix_and_by_payload_key_and_value(operator_client):
    wanted = ReadyJobFactory(queue="search", payload={"a": 42, "b": 1})
    ReadyJobFactory(queue="search", payload={"a": 7, "b": 1})

    by_prefix = operator_client.get(JOBS, {"prefix": "demo.jobs.a"}).context["page"].items
    by_other_prefix = operator_client.get(JOBS, {"prefix": "demo.jobs.z"}).context["page"].items
    by_payload = operator_client.get(JOBS, {"payload": "a=42"}).context["page"].items
    as_json = operator_client.get(JOBS, {"payload": '{"a": 42}'}).context["page"].items

    assert len(by_prefix) == 2 and by_other_prefix == []
    assert [j.id for j in by_payload] == [wanted.id] == [j.id for j in as_json]


def test_payload_search_reads_live_jobs_only_until_the_operator_makes_the_index(operator_client):
    FailedJobFactory(queue="indexed", payload={"a": 99, "b": 0})
    live = ReadyJobFactory(queue="indexed", payload={"a": 99, "b": 1})

    without = operator_client.get(JOBS, {"payload": "a=99"})
    assert [j.id for j in without.context["page"].items] == [live.id]
    assert 'id="wh-payload-live-only"' in without.content.decode()
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE INDEX workhorse_job_payload_gin ON workhorse_job"
            " USING gin (payload jsonb_path_ops)"
        )
    with_index = operator_client.get(JOBS, {"payload": "a=99"})

    assert len(with_index.context["page"].items) == 2
    assert 'id="wh-payload-live-only"' not in with_index.content.decode()


def test_a_support_user_may_not_search_by_payload(support_client):
    ReadyJobFactory(payload={"a": 1, "b": 2})
    assert support_client.get(JOBS, {"payload": "a=1"}).status_code == 403


def test_a_malformed_payload_search_is_a_message(operator_client):
    response = operator_client.get(JOBS, {"payload": "no equals sign"})
    assert response.status_code == 200
    assert "write key=value" in response.content.decode()


def test_auto_refresh_is_opt_in(operator_client):
    ActiveJobFactory(queue="refresh")

    for url in (JOBS, QUEUES):
        assert 'http-equiv="refresh"' not in operator_client.get(url).content.decode()
        body = operator_client.get(url, {"refresh": "5"}).content.decode()
        assert '<meta http-equiv="refresh" content="5">' in body
        assert 'id="wh-refresh-off"' in body


@pytest.mark.parametrize(
    "narrower", [{"prefix": "demo."}, {"payload": "a=1"}, {"q": "key-1"}, {"error_type": "X"}]
)
def test_an_action_on_every_matching_job_refuses_a_filter_it_cannot_apply(
    operator_client, narrower
):
    """Acting on the queue and state alone would take in jobs the list did not show."""
    job = ReadyJobFactory(queue="narrow", payload={"a": 2, "b": 0})
    form = {"action": "cancel", "queue": "narrow", "state": "ready", **narrower}

    listing = operator_client.get(JOBS, {"queue": "narrow", **narrower}).content.decode()
    response = operator_client.post(f"{JOBS}act/all/", form, follow=True)

    assert 'id="wh-cancel-all"' not in listing
    assert "nothing was done" in response.content.decode()
    assert Admin().get_job(job.id).state == "ready"


def test_an_action_on_every_matching_job_commits_batch_by_batch_under_atomic_requests(
    operator_client, monkeypatch
):
    """With ``ATOMIC_REQUESTS`` on, Django would run the whole request in one
    transaction, and the 1,000-job batches would be savepoints of it; the
    filter-wide action's view is exempt, on every alias."""
    from django.core.handlers.base import BaseHandler
    from django.db import connections
    from django.urls import resolve

    for alias in connections:
        monkeypatch.setitem(connections.settings[alias], "ATOMIC_REQUESTS", True)
    view = resolve(JOBS + "act/all/").func

    assert BaseHandler().make_view_atomic(view) is view
    # The job list stays as Django makes it: only the long action is exempt.
    listing = resolve(JOBS).func
    assert BaseHandler().make_view_atomic(listing) is not listing


def test_cancel_all_without_a_state_counts_and_walks_the_live_jobs_only(operator_client):
    from tests.factories import SucceededJobFactory

    finished = [SucceededJobFactory(queue="mixed") for _ in range(3)]
    waiting = [ReadyJobFactory(queue="mixed") for _ in range(2)]

    confirm = operator_client.get(
        f"{JOBS}act/all/", {"action": "cancel", "queue": "mixed"}
    ).content.decode()
    assert "<strong>2</strong> job(s) match queue mixed" in confirm
    response = operator_client.post(
        f"{JOBS}act/all/", {"action": "cancel", "queue": "mixed"}, follow=True
    )
    assert "asked for: a worker cancels the matching jobs" in response.content.decode()
    run_jobs(queues=[OPERATOR_QUEUE])

    (action,) = Admin().bulk_actions()
    assert (action.matched, action.changed, action.skipped) == (2, 2, 0)  # no finished job read
    assert action.states == ["blocked", "scheduled", "ready", "active"]
    assert {Admin().get_job(j.id).state for j in waiting} == {"canceled"}
    assert {Admin().get_job(j.id).state for j in finished} == {"succeeded"}


def test_confirming_an_action_on_every_matching_job_returns_before_any_job_changes(
    operator_client,
):
    waiting = [ReadyJobFactory(queue="later") for _ in range(2)]

    response = operator_client.post(
        f"{JOBS}act/all/", {"action": "cancel", "queue": "later", "reason": "bad deploy"}
    )

    (action,) = Admin().bulk_actions()
    assert response.status_code == 302
    assert response["Location"] == f"{JOBS}actions/{action.id}/"
    assert (action.status, action.requested_by, action.reason) == (
        "queued",
        "operator",
        "bad deploy",
    )
    assert action.permission == "django_workhorse.change_job"
    assert {Admin().get_job(j.id).state for j in waiting} == {"ready"}
    page = operator_client.get(response["Location"]).content.decode()
    assert 'id="wh-action-cancel"' in page and '<meta http-equiv="refresh" content="2">' in page
    assert f'id="wh-action-banner-{action.id}"' in operator_client.get(JOBS).content.decode()


def test_a_viewer_sees_an_action_but_may_neither_ask_for_one_nor_stop_it(viewer_client):
    ReadyJobFactory(queue="seen")
    action = Admin().start_bulk("cancel", queue="seen")

    page = viewer_client.get(f"{JOBS}actions/{action.id}/")
    listing = viewer_client.get(f"{JOBS}actions/").content.decode()
    asked = viewer_client.post(f"{JOBS}act/all/", {"action": "cancel", "queue": "seen"})
    stopped = viewer_client.post(f"{JOBS}actions/{action.id}/cancel/")

    assert page.status_code == 200 and 'id="wh-action-cancel"' not in page.content.decode()
    assert f"actions/{action.id}/" in listing
    assert (asked.status_code, stopped.status_code) == (403, 403)
    assert [a.id for a in Admin().bulk_actions()] == [action.id]
    assert Admin().bulk_action(action.id).status == "queued"


def test_an_action_page_of_no_such_action_is_a_404(operator_client):
    assert operator_client.get(f"{JOBS}actions/12345/").status_code == 404
    assert operator_client.get(f"{JOBS}actions/abc/").status_code == 404


def test_an_action_on_every_job_of_a_state_it_does_not_apply_to_has_nothing_to_do(
    operator_client,
):
    FailedJobFactory(queue="ended")

    confirm = operator_client.get(
        f"{JOBS}act/all/", {"action": "cancel", "queue": "ended", "state": "failed"}
    ).content.decode()
    assert "No job matches" in confirm and "nothing to cancel" in confirm
    assert 'id="wh-matching-confirm"' not in confirm
    response = operator_client.post(
        f"{JOBS}act/all/", {"action": "cancel", "queue": "ended", "state": "failed"}, follow=True
    )
    assert "there is nothing to cancel: nothing was done" in response.content.decode()
    assert Admin().bulk_actions() == []


def test_a_cancel_of_ticked_jobs_keeps_the_reason_given(operator_client):
    jobs = [ReadyJobFactory(queue="ticked") for _ in range(2)]

    operator_client.post(
        f"{JOBS}act/",
        {"action": "cancel", "job": [j.id for j in jobs], "reason": "duplicate import"},
    )

    for job in jobs:
        error = Admin().get_job(job.id).error
        assert (error["reason"], error["by"]) == ("duplicate import", "operator")


def test_a_cancel_of_ticked_jobs_with_a_reason_too_long_does_nothing_and_says_so(
    operator_client,
):
    job = ReadyJobFactory(queue="ticked")

    response = operator_client.post(
        f"{JOBS}act/", {"action": "cancel", "job": [job.id], "reason": "x" * 1001}, follow=True
    )

    assert any("nothing was done" in str(m) for m in response.context["messages"])
    assert Admin().get_job(job.id).state == "ready"


@pytest.mark.parametrize(
    ("state", "offered"),
    [("", {"retry", "cancel"}), ("ready", {"cancel"}), ("failed", {"retry"})],
)
def test_the_job_list_offers_retry_all_and_cancel_all_where_the_state_allows(
    operator_client, state, offered
):
    FailedJobFactory(queue="offers")  # first: its factory claims from the queue
    ReadyJobFactory(queue="offers")

    body = operator_client.get(JOBS, {"queue": "offers", "state": state}).content.decode()

    assert {a for a in ("retry", "cancel") if f'id="wh-{a}-all"' in body} == offered
