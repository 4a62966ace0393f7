"""A NUL character, which PostgreSQL's text and jsonb cannot hold, in any of
the job list's filters is refused like other bad search input (docs/admin.md,
"Search"): the page answers with a message naming the problem, not a
server error."""

from __future__ import annotations

import pytest

from django_workhorse import Admin, InvalidQueryError
from tests.factories import ReadyJobFactory

pytestmark = pytest.mark.django_db

JOBS = "/admin/django_workhorse/job/"

NUL_PAYLOADS = {
    "key=value": "a=ab\x00c",
    "quoted value": 'a="\\u0000"',
    "json value": '{"a": "\\u0000"}',
    "json key": '{"\\u0000a": 1}',
    "nested": '{"a": {"tags": ["a", "b\\u0000"]}}',
    "lone surrogate": '{"a": "\\ud800"}',
}


@pytest.mark.parametrize("text", NUL_PAYLOADS.values(), ids=NUL_PAYLOADS.keys())
def test_a_payload_search_postgresql_cannot_hold_is_a_message(operator_client, text):
    ReadyJobFactory(payload={"a": 1, "b": 2})

    response = operator_client.get(JOBS, {"payload": text})

    assert response.status_code == 200
    body = response.content.decode().lower()
    assert "payload search: payload" in body  # the message, not the page's own words
    assert "which postgresql cannot store" in body or "not valid utf-8" in body
    assert response.context["page"].items == []


@pytest.mark.parametrize(
    ("field", "extra"),
    [
        ("queue", {}),
        ("name", {}),
        ("prefix", {}),
        ("q", {}),
        ("error_type", {"state": "failed"}),
    ],
)
def test_a_nul_in_any_other_filter_is_a_message(operator_client, field, extra):
    response = operator_client.get(JOBS, {field: "ab\x00c", **extra})

    assert response.status_code == 200
    assert response.context["page"].items == []
    assert list(response.context["messages"]), response.content.decode()[:2000]


def test_the_python_api_refuses_a_payload_holding_a_nul_naming_it():
    with pytest.raises(InvalidQueryError, match=r"payload\['customer'\] contains a NUL"):
        Admin().list_jobs(payload={"customer": "\x00"})


def test_a_payload_search_nested_deeper_than_a_payload_may_be_is_a_message(operator_client):
    response = operator_client.get(JOBS, {"payload": '{"a": ' + "[" * 5000 + "]" * 5000 + "}"})

    assert response.status_code == 200
    assert "nests lists and objects more than 100 deep" in response.content.decode()
