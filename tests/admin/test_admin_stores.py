"""Several stores in the admin: a store switch on the job list, the queues
page and the job page; every link of a store's pages names it with
``?store=``; a URL without one shows ``WORKHORSE['DATABASE']``."""

from __future__ import annotations

import pytest
from demo.jobs import add

from django_workhorse import Admin
from django_workhorse.core.definitions import JobDefinition
from tests.factories import ReadyJobFactory
from tests.second_store import second_store

JOBS = "/admin/django_workhorse/job/"
QUEUES = "/admin/django_workhorse/queue/"


def on_second_store(n: int) -> int:
    """A job of the second store."""
    return n


@pytest.fixture(scope="module")
def second(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock(), second_store() as alias:
        yield alias


@pytest.fixture
def two_stores(second, settings):
    """``WORKHORSE['STORES']`` lists both; the job of the second store."""
    settings.WORKHORSE = {**settings.WORKHORSE, "STORES": ["default", second]}
    return JobDefinition(on_second_store, name="tests.on_second_store", using=second)


pytestmark = pytest.mark.django_db(databases=["default", "second"])


def test_with_one_store_the_pages_show_no_switch_and_links_name_no_store(operator_client, second):
    job = ReadyJobFactory(queue="stores-one")
    body = operator_client.get(JOBS, {"queue": "stores-one"}).content.decode()
    assert 'id="wh-stores"' not in body
    assert f'href="{JOBS}{job.id}/"' in body


def test_the_job_list_switches_to_the_second_store(operator_client, two_stores):
    on_default = ReadyJobFactory(queue="stores-list", definition=add)
    on_second = ReadyJobFactory(queue="stores-list", definition=two_stores, payload={"n": 1})

    default_page = operator_client.get(JOBS, {"queue": "stores-list"})
    second_page = operator_client.get(JOBS, {"queue": "stores-list", "store": "second"})

    assert [j.name for j in default_page.context["page"].items] == ["demo.jobs.add"]
    assert [j.name for j in second_page.context["page"].items] == ["tests.on_second_store"]
    body = second_page.content.decode()
    assert 'id="wh-stores"' in body
    assert f'href="{JOBS}?store=default"' in body
    assert f'href="{JOBS}?store=second" class="wh-on"' in body
    assert f'href="{JOBS}{on_second.id}/?store=second"' in body
    assert '<input type="hidden" name="store" value="second">' in body
    default_body = default_page.content.decode()
    assert f'href="{JOBS}{on_default.id}/?store=default"' in default_body


def test_a_job_url_names_its_store(operator_client, two_stores):
    job = ReadyJobFactory(queue="stores-page", definition=two_stores, payload={"n": 2})

    page = operator_client.get(f"{JOBS}{job.id}/", {"store": "second"})

    assert page.status_code == 200
    assert page.context["job"].name == "tests.on_second_store"
    body = page.content.decode()
    assert f'href="{JOBS}{job.id}/cancel/?store=second"' in body
    assert f'href="{JOBS}?queue=stores-page&amp;store=second"' in body
    confirm = operator_client.get(f"{JOBS}{job.id}/cancel/", {"store": "second"}).content.decode()
    assert f'action="{JOBS}{job.id}/act/?store=second"' in confirm
    assert f'href="{JOBS}?store=default"' in body  # the switch goes to a store's job list


def test_a_url_without_a_store_shows_the_default_store(operator_client, two_stores):
    job = ReadyJobFactory(queue="stores-old-url", definition=add)
    page = operator_client.get(f"{JOBS}{job.id}/")
    assert page.status_code == 200 and page.context["job"].name == "demo.jobs.add"
    assert page.context["store"] == "default"


@pytest.mark.parametrize("store", ["nope", "", "other", "second"])
def test_an_alias_that_is_not_a_store_is_a_404_naming_the_stores(
    operator_client, second, settings, store
):
    # "second" is an alias of settings.DATABASES but not listed in STORES here.
    settings.WORKHORSE = {**settings.WORKHORSE, "STORES": ["default"]}
    for url in (JOBS, f"{JOBS}1/", QUEUES):
        response = operator_client.get(url, {"store": store})
        assert response.status_code == 404, url
        body = response.content.decode()
        assert "the stores are default" in body
        switch = QUEUES if url == QUEUES else JOBS
        assert f'href="{switch}?store=default"' in body  # a link to each store


def test_an_action_on_a_job_of_the_second_store_acts_there(operator_client, two_stores):
    job = ReadyJobFactory(queue="stores-act", definition=two_stores, payload={"n": 3})

    response = operator_client.post(f"{JOBS}{job.id}/act/?store=second", {"action": "cancel"})

    assert response.status_code == 302
    assert response.url == f"{JOBS}{job.id}/?store=second"
    assert Admin(using="second").get_job(job.id).state == "canceled"


def test_the_queues_page_shows_and_pauses_the_queues_of_the_chosen_store(
    operator_client, two_stores
):
    ReadyJobFactory(queue="stores-q-default", definition=add)
    ReadyJobFactory(queue="stores-q-second", definition=two_stores, payload={"n": 4})

    page = operator_client.get(QUEUES, {"store": "second"})
    names = [row["stats"].name for row in page.context["rows"]]
    assert "stores-q-second" in names and "stores-q-default" not in names
    body = page.content.decode()
    assert f'href="{QUEUES}?store=default"' in body
    assert f'href="{JOBS}?queue=stores-q-second&amp;store=second"' in body

    response = operator_client.post(
        f"{QUEUES}act/?store=second", {"action": "pause", "queue": "stores-q-second"}
    )
    assert response.url == f"{QUEUES}?store=second"
    assert Admin(using="second").queue_stats()[0].paused
