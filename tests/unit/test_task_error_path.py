"""``TaskError.exception_class`` is Django's, and imports the module its
path names, whatever wrote the error (docs/django-tasks.md, ``errors``);
``exception_class_path`` is a plain string that imports nothing."""

from __future__ import annotations

import sys

from django_workhorse.tasks.results import task_error

SPY = """
from pathlib import Path

Path(__file__).with_name("imported").touch()


class Boom(Exception):
    pass
"""


def test_an_errors_class_path_is_a_string_and_exception_class_imports_its_module(
    tmp_path, monkeypatch
):
    (tmp_path / "error_spy.py").write_text(SPY)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        error = task_error({"type": "error_spy.Boom", "message": "from SQL"})

        assert error.exception_class_path == "error_spy.Boom"
        assert not (tmp_path / "imported").exists()
        assert error.exception_class.__name__ == "Boom"
        assert (tmp_path / "imported").exists()
    finally:
        sys.modules.pop("error_spy", None)
