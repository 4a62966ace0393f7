"""``LOG_FORMAT = "json"`` formats the handlers that write the worker's lines
(observability.md): every handler of the root and ``django_workhorse``
loggers, and the console and file handlers of other loggers; a mail handler
of another logger is left as it is."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from django.utils.log import AdminEmailHandler

from django_workhorse.operations.logformat import JsonFormatter, use_json


class Quiet(logging.Handler):
    """A handler of no stream kind, as a project may put on the root logger."""

    def emit(self, record: logging.LogRecord) -> None:
        pass


@pytest.fixture
def handlers(tmp_path) -> Iterator[dict[str, logging.Handler]]:
    plain = logging.Formatter("%(message)s")
    made = {
        "root": Quiet(),
        "workhorse": Quiet(),
        "console": logging.StreamHandler(),
        "file": logging.FileHandler(tmp_path / "app.log", delay=True),
        "mail": AdminEmailHandler(),
    }
    places = {
        "root": logging.getLogger(),
        "workhorse": logging.getLogger("django_workhorse"),
        "console": logging.getLogger("jsonlogs.console"),
        "file": logging.getLogger("jsonlogs.file"),
        "mail": logging.getLogger("jsonlogs.mail"),
    }
    for key, handler in made.items():
        handler.setFormatter(plain)
        places[key].addHandler(handler)
    # use_json formats every such handler of the process: put back the
    # formatters of those this test did not make.
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    before = {
        handler: handler.formatter
        for logger in loggers
        if isinstance(logger, logging.Logger)
        for handler in logger.handlers
    }
    try:
        yield made
    finally:
        for handler, formatter in before.items():
            handler.setFormatter(formatter)
        for key, handler in made.items():
            places[key].removeHandler(handler)
            handler.close()


def test_json_formats_the_root_workhorse_console_and_file_handlers_but_not_mail(handlers):
    use_json("w:1:x")

    for key in ("root", "workhorse", "console", "file"):
        assert isinstance(handlers[key].formatter, JsonFormatter), key
    assert not isinstance(handlers["mail"].formatter, JsonFormatter)
