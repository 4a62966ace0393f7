"""``manage.py workhorse_worker_role ROLE`` (docs/security.md) refuses a role
that is not there with the statement that creates it, quoted as PostgreSQL
needs, and a role name that is empty or not text PostgreSQL can store."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("workhorse_worker_role", *args, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("role", "create"),
    [
        ("audit_no_such_role", "CREATE ROLE audit_no_such_role LOGIN"),
        ('audit "odd" role', 'CREATE ROLE "audit ""odd"" role" LOGIN'),
        ("AuditMixedCase", 'CREATE ROLE "AuditMixedCase" LOGIN'),
    ],
)
def test_a_missing_role_is_refused_with_the_statement_that_creates_it(role, create):
    with pytest.raises(CommandError) as raised:
        run(role)
    message = str(raised.value)
    assert message.startswith(f"role {role!r} does not exist: create it first, e.g. ")
    assert create in message


@pytest.mark.parametrize(("role", "problem"), [("", "name the role"), ("a\x00b", "NUL character")])
def test_a_role_name_that_cannot_be_a_role_is_refused(role, problem):
    with pytest.raises(CommandError, match=problem):
        run(role)


def test_the_grants_of_an_existing_role_are_printed_not_run(cursor):
    cursor.execute("SELECT current_user")
    (me,) = cursor.fetchone()
    printed = run(me).splitlines()
    assert printed[0].startswith("GRANT CONNECT ON DATABASE ")
    assert all(line.startswith("GRANT ") and line.endswith(";") for line in printed)
    assert any("workhorse_claim_many_v1" in line for line in printed)
