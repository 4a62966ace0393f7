"""The job page shows whatever JSON object an event holds (docs/admin.md: no
page answers a server error). Anything with INSERT on ``workhorse_job_event``
or EXECUTE on the internal functions can write an event's data, and keys
named like a dict's methods (``items``, ``keys``, ``values``, ``get``) must
be shown as keys, not looked up as methods."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.factories import ActiveJobFactory

pytestmark = pytest.mark.django_db

JOBS = "/admin/django_workhorse/job/"


def test_an_event_whose_data_has_keys_named_like_dict_methods_is_shown_key_by_key(
    operator_client,
):
    job = ActiveJobFactory()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO workhorse_job_event (job_id, kind, data) VALUES (%s, 'made_due', %s)",
            [job.id, '{"items": 3, "keys": "k-1", "values": [1, 2], "get": null, "error": "x"}'],
        )

    response = operator_client.get(f"{JOBS}{job.id}/")

    assert response.status_code == 200
    body = response.content.decode()
    # In jsonb's key order; the error is shown apart, as for every event.
    assert '<div class="wh-meta">get: None; keys: k-1; items: 3; values: [1, 2]</div>' in body


@pytest.mark.parametrize(
    "data",
    [
        "[1, 2]",
        '"a bare string"',
        "42",
        "null",
        '{"nested": {"items": {"keys": 1}}}',
        '{"by": ["operator"], "error": [1]}',
        '{"error": {"items": 1, "traceback": {"keys": 2}}}',
        '{"<b>key</b>": "<script>alert(1)</script>"}',
    ],
)
@pytest.mark.parametrize("kind", ["made_due", "promoted"])
def test_the_job_page_shows_any_json_an_event_holds_escaped_to_every_user(
    client, operator, support, data, kind
):
    job = ActiveJobFactory()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO workhorse_job_event (job_id, kind, data) VALUES (%s, %s, %s)",
            [job.id, kind, data],
        )

    for user in (operator, support):  # with and without the payload permission
        client.force_login(user)
        response = client.get(f"{JOBS}{job.id}/")

        assert response.status_code == 200
        assert "<script>alert(1)" not in response.content.decode()
