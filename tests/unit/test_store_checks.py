"""Which aliases are stores: ``WORKHORSE['STORES']`` when set, else
``DATABASE`` and every alias a job is bound to; ``manage.py check`` reports a
``STORES`` list that is not aliases or leaves out a store (workhorse.E008)."""

from __future__ import annotations

import pytest
from django.test import override_settings

from django_workhorse.core import registry
from django_workhorse.core.definitions import JobDefinition
from django_workhorse.core.stores import store_aliases
from django_workhorse.operations.checks import check_stores

DATABASES = {
    "default": {"ENGINE": "django.db.backends.postgresql", "NAME": "a"},
    "reports": {"ENGINE": "django.db.backends.postgresql", "NAME": "b"},
    "billing": {"ENGINE": "django.db.backends.postgresql", "NAME": "c"},
}


@pytest.fixture(autouse=True)
def own_registry(monkeypatch):
    monkeypatch.setattr(registry, "_jobs", {})


def bind(name: str, alias: str) -> None:
    def handler() -> None:
        return None

    handler.__qualname__ = name
    registry.register(JobDefinition(handler, name=name, using=alias))


@pytest.fixture
def three_aliases():
    from django.db import connections

    for alias, entry in DATABASES.items():
        if alias != "default":
            connections.settings[alias] = {**connections["default"].settings_dict, **entry}
    yield
    for alias in DATABASES:
        if alias != "default":
            del connections.settings[alias]


def test_without_the_setting_the_stores_are_the_default_and_every_bound_alias(three_aliases):
    bind("a.billing", "billing")
    bind("a.reports", "reports")
    bind("a.plain", "default")
    assert store_aliases() == ["default", "billing", "reports"]
    assert check_stores() == []


def test_the_setting_lists_the_stores_with_the_default_first(three_aliases):
    with override_settings(WORKHORSE={"STORES": ["reports", "default"]}):
        assert store_aliases() == ["default", "reports"]
        assert check_stores() == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("default", "must be a non-empty list of aliases"),
        ([], "must be a non-empty list of aliases"),
        (["default", 3], "must be a non-empty list of aliases"),
        (["default", "nowhere"], "names 'nowhere', which is not an alias of settings.DATABASES"),
        (["default", "reports", "reports"], "names 'reports' more than once"),
        (["reports"], "leaves out WORKHORSE['DATABASE'] ('default')"),
    ],
)
def test_a_stores_value_that_is_not_a_list_of_aliases_is_an_error(three_aliases, value, message):
    with override_settings(WORKHORSE={"STORES": value}):
        [error] = check_stores()
        assert store_aliases() == ["default"]  # what the pages show meanwhile
    assert error.id == "workhorse.E008"
    assert error.msg.startswith("WORKHORSE['STORES'] ")
    assert message in error.msg
    assert "docs/admin.md#several-stores" in error.hint


def test_a_job_bound_to_an_alias_the_list_leaves_out_is_an_error_naming_both(three_aliases):
    bind("a.billing", "billing")
    with override_settings(WORKHORSE={"STORES": ["default", "reports"]}):
        [error] = check_stores()
    assert error.id == "workhorse.E008"
    assert "job 'a.billing' is bound to database 'billing'" in error.msg
    assert error.hint == "Add 'billing' to WORKHORSE['STORES']."
