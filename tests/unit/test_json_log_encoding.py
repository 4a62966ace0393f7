"""A JSON log line is valid UTF-8 whatever its message holds (observability.md):
a lone surrogate, as ``surrogateescape`` makes of a file name's stray byte,
is written as its JSON escape instead of costing a UTF-8 handler the line."""

from __future__ import annotations

import json
import logging
import os

from django_workhorse.operations.logformat import JsonFormatter

STRAY = os.fsdecode(b"report-\xff.csv")  # 'report-\udcff.csv'


def test_a_utf8_file_handler_writes_a_line_whose_message_and_exception_hold_a_lone_surrogate(
    tmp_path, capsys
):
    path = tmp_path / "worker.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(JsonFormatter("w-1"))
    logger = logging.getLogger("tests.jsonlogs.surrogates")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        try:
            raise FileNotFoundError(f"no such file: {STRAY}")
        except FileNotFoundError:
            logger.exception("cannot open %s", STRAY)
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
        handler.close()

    assert "Logging error" not in capsys.readouterr().err
    (line,) = path.read_bytes().decode("utf-8").splitlines()
    record = json.loads(line)
    assert record["message"] == f"cannot open {STRAY}"
    assert f"FileNotFoundError: no such file: {STRAY}" in record["exception"]


def test_a_message_holding_unicode_line_separators_stays_one_line_and_reads_back_the_same():
    message = "row 1\u2028row 2\u2029row 3\x85row 4"
    record = logging.LogRecord("tests.jsonlogs", logging.INFO, __file__, 1, message, None, None)

    line = JsonFormatter("w-1").format(record)

    assert len(line.splitlines()) == 1
    assert json.loads(line)["message"] == message
