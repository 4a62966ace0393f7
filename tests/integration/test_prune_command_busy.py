"""``manage.py workhorse_prune`` while another prune runs (docs/retention.md):
"the command says so and exits with an error", changing nothing."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

pytestmark = pytest.mark.django_db(transaction=True, available_apps=["django_workhorse"])


@pytest.mark.parametrize("flags", [[], ["--dry-run"]])
def test_prune_says_another_prune_is_running_and_fails(pg_connect, flags):
    other = pg_connect()
    other.execute("SELECT pg_advisory_lock(hashtext('workhorse_prune'))")

    out = io.StringIO()
    with pytest.raises(CommandError, match="another prune is running on this database"):
        call_command("workhorse_prune", *flags, stdout=out)

    other.execute("SELECT pg_advisory_unlock(hashtext('workhorse_prune'))")
    call_command("workhorse_prune", *flags, stdout=io.StringIO())  # and runs once it is done
