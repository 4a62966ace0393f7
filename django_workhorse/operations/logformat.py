"""``WORKHORSE["LOG_FORMAT"] = "json"``: one JSON object per log line, for log pipelines.

Each line carries ``time`` (UTC, ISO 8601), ``level``, ``logger``,
``message``, ``worker`` (this process's worker id) and, on records written
while a handler runs or by the worker about a job, ``job_id``, ``job_name``,
``queue`` and ``attempt``. An exception adds ``exception`` (the formatted
traceback). The formatter can also be named in a project's ``LOGGING``
(``"()": "django_workhorse.operations.logformat.JsonFormatter"``).

Every line is valid UTF-8: a lone surrogate (a file name decoded with
``surrogateescape``, say) is written as its JSON escape ``\\udcff``, which a
JSON reader turns back into the same character, instead of making a UTF-8
handler drop the whole line.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime

ANNOTATIONS = (
    ("workhorse_job_id", "job_id"),
    ("workhorse_name", "job_name"),
    ("workhorse_queue", "queue"),
    ("workhorse_attempt", "attempt"),
)
"""Record attributes (set by the worker's record factory or ``extra=``) and their JSON keys."""

SURROGATE = re.compile(r"[\ud800-\udfff\x85\u2028\u2029]")
"""Code points no UTF-8 encoder writes, and those that ``str.splitlines``
(and editors and log viewers) take for line ends though JSON does not
escape them: NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR. They can only
occur inside a JSON string."""


def escape_surrogates(text: str) -> str:
    """``text`` with each surrogate and line-ending code point written as a
    JSON ``\\uXXXX`` escape, so that the line encodes as strict UTF-8, stays
    one line however it is split, and reads back the same."""
    return SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_process_worker_id: str | None = None
"""The id of the worker this process runs, once ``runworker`` has chosen it."""


def set_process_worker_id(worker_id: str) -> None:
    """Tell every JsonFormatter of this process the worker id to put on its
    lines: one named in ``LOGGING`` is made before the worker has an id."""
    global _process_worker_id
    _process_worker_id = worker_id


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON."""

    def __init__(self, worker_id: str | None = None) -> None:
        super().__init__()
        self.worker_id = worker_id

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        worker = (
            getattr(record, "workhorse_worker_id", None) or self.worker_id or _process_worker_id
        )
        if worker:
            line["worker"] = worker
        for attribute, key in ANNOTATIONS:
            value = getattr(record, attribute, None)
            if value is not None:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        return escape_surrogates(json.dumps(line, default=str, ensure_ascii=False))


def line_handlers() -> list[logging.Handler]:
    """The handlers that write the worker process's log lines: every handler
    of the root and django_workhorse loggers, and every stream handler
    (console or file) of any other logger, such as the console handler
    Django's default logging gives the ``django`` logger (it writes with
    ``DEBUG`` on, the Tasks API's lines among them). Handlers of other kinds
    (mail, syslog) elsewhere are left alone."""
    found: dict[int, logging.Handler] = {}
    for name in (None, "django_workhorse"):
        for handler in logging.getLogger(name).handlers:
            found[id(handler)] = handler
    for logger in list(logging.Logger.manager.loggerDict.values()):
        if isinstance(logger, logging.Logger):
            for handler in logger.handlers:
                if isinstance(handler, logging.StreamHandler):
                    found[id(handler)] = handler
    return list(found.values())


def use_json(worker_id: str) -> None:
    """Put a JsonFormatter on every handler that writes the worker's log lines
    (``line_handlers``)."""
    formatter = JsonFormatter(worker_id)
    for handler in line_handlers():
        handler.setFormatter(formatter)
