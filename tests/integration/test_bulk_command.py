"""``manage.py workhorse_bulk``: ask for, follow and stop a filter-wide action."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from django_workhorse import Admin
from django_workhorse.operations.bulk_actions import OPERATOR_QUEUE
from django_workhorse.testing import run_jobs
from tests.factories import many_failed_jobs

pytestmark = pytest.mark.django_db


def command(*args: str) -> str:
    out = StringIO()
    call_command("workhorse_bulk", *args, stdout=out)
    return out.getvalue()


def test_the_command_asks_for_an_action_that_a_worker_then_runs():
    many_failed_jobs(3, queue="mail")

    asked = command("retry", "--queue", "mail", "--by", "ops")
    (action,) = Admin().bulk_actions()
    run_jobs(queues=[OPERATOR_QUEUE])

    assert f"asked for: action #{action.id} (retry queue mail): queued" in asked
    assert (action.requested_by, action.permission) == ("ops", "manage.py (shell access)")
    assert "finished, 3 / 3 done, 3 changed" in command("status", str(action.id))


def test_the_command_stops_an_action():
    many_failed_jobs(1, queue="mail")
    command("retry", "--queue", "mail")
    (action,) = Admin().bulk_actions()

    assert "is canceled; it had not started" in command("stop", str(action.id))


def test_a_state_the_action_cannot_change_is_a_command_error():
    with pytest.raises(CommandError, match="there is nothing to retry"):
        command("retry", "--state", "ready")
