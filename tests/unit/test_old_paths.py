"""The module paths of 0.1.0 still import, as the modules at their new places."""

from __future__ import annotations

import importlib
import logging.config

import pytest

from django_workhorse.old_paths import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_path_imports_the_module_at_its_new_place(old):
    assert importlib.import_module(f"django_workhorse.{old}") is importlib.import_module(
        f"django_workhorse.{MOVED[old]}"
    )


def test_an_old_module_keeps_its_own_name_and_spec():
    from django_workhorse import store
    from django_workhorse.db import store as moved

    assert store is moved
    assert store.__name__ == store.__spec__.name == "django_workhorse.db.store"


def test_from_the_package_import_an_old_module_name_works():
    from django_workhorse import conf, store

    assert store.SCHEMA_VERSION >= 1
    assert conf.get_settings


def test_a_logging_setting_naming_the_old_formatter_path_loads():
    logging.config.dictConfig(
        {
            "version": 1,
            "disable_existing_loggers": False,
            "formatters": {"json": {"()": "django_workhorse.logformat.JsonFormatter"}},
            "handlers": {"h": {"class": "logging.NullHandler", "formatter": "json"}},
        }
    )
    from django_workhorse.operations.logformat import JsonFormatter

    handler = logging.getHandlerByName("h")
    assert isinstance(handler.formatter, JsonFormatter)


def test_a_path_that_never_existed_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("django_workhorse.no_such_module")
