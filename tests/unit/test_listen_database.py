"""``WORKHORSE['LISTEN_DATABASE']``: the alias a worker opens its LISTEN
connection on (docs/settings.md#listen_database). A bad value is reported by
``manage.py check`` as workhorse.E001 naming the key and what it must be."""

from __future__ import annotations

import pytest
from django.core.checks import run_checks
from django.test import override_settings

from django_workhorse.core.conf import DEFAULTS, get_settings, problems

# Only settings are read here, no connection is made.
pytestmark = pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")

DATABASES = {
    "default": {"ENGINE": "django.db.backends.postgresql", "NAME": "app"},
    "direct": {"ENGINE": "django.db.backends.postgresql", "NAME": "app"},
    "other": {"ENGINE": "django.db.backends.postgresql", "NAME": "other"},
    "other_direct": {"ENGINE": "django.db.backends.postgresql", "NAME": "other"},
    "lite": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"},
}


@pytest.mark.parametrize(
    ("value", "key", "says"),
    [
        ("nowhere", "LISTEN_DATABASE", "'nowhere' is not an alias of settings.DATABASES"),
        (5, "LISTEN_DATABASE", "must be None, the alias of settings.DATABASES"),
        ("lite", "LISTEN_DATABASE", "LISTEN needs a PostgreSQL alias"),
        ({"nowhere": "direct"}, "LISTEN_DATABASE['nowhere']", "is not an alias"),
        ({"default": "nowhere"}, "LISTEN_DATABASE['default']", "is not an alias"),
    ],
)
def test_a_bad_listen_database_is_reported_as_E001_naming_the_key(value, key, says):
    with override_settings(DATABASES=DATABASES, WORKHORSE={"LISTEN_DATABASE": value}):
        [(found_key, message)] = problems()
        errors = [
            e for e in run_checks(tags=["workhorse"], databases=[]) if e.id == "workhorse.E001"
        ]
    assert found_key == key
    assert says in message
    assert len(errors) == 1 and errors[0].msg.startswith("WORKHORSE['LISTEN_DATABASE']")


def test_without_listen_database_a_worker_listens_on_its_own_alias():
    assert DEFAULTS["LISTEN_DATABASE"] is None
    with override_settings(DATABASES=DATABASES, WORKHORSE={}):
        assert get_settings().listen_alias("default") == "default"


def test_one_alias_serves_the_worker_of_workhorse_database_only():
    with override_settings(DATABASES=DATABASES, WORKHORSE={"LISTEN_DATABASE": "direct"}):
        settings = get_settings()
    assert settings.listen_alias("default") == "direct"
    assert settings.listen_alias("other") == "other"


def test_a_dict_names_the_listen_alias_of_each_workers_alias():
    with override_settings(
        DATABASES=DATABASES,
        WORKHORSE={"LISTEN_DATABASE": {"default": "direct", "other": "other_direct"}},
    ):
        settings = get_settings()
    assert settings.listen_alias("default") == "direct"
    assert settings.listen_alias("other") == "other_direct"
