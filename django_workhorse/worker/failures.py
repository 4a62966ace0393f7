"""How a failed run is described in the database and to ``on_job_failure``."""

from __future__ import annotations

import json
import traceback
from dataclasses import dataclass

TRACEBACK_LIMIT = 16_000


def error_envelope(exc: BaseException, *, message: str | None = None) -> dict[str, str]:
    """The JSON stored for a failed attempt: exception class, message, traceback."""
    cls = type(exc)
    text = "".join(traceback.format_exception(exc))
    return {
        "type": f"{cls.__module__}.{cls.__qualname__}",
        "message": storable(message if message is not None else str(exc)),
        "traceback": storable(text[-TRACEBACK_LIMIT:]),
    }


def storable(text: str) -> str:
    """``text`` with what jsonb cannot hold replaced: lone surrogates (from
    ``surrogateescape`` file names, say) and NUL characters."""
    return text.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\\u0000")


def error_json(exc: BaseException, *, message: str | None = None) -> str:
    return json.dumps(error_envelope(exc, message=message), separators=(",", ":"))


@dataclass(frozen=True)
class JobFailure:
    """What ``WORKHORSE['ON_JOB_FAILURE']`` receives after a failed run is recorded."""

    job_id: int
    name: str
    queue: str
    attempt: int
    max_attempts: int
    will_retry: bool
    """True when the job will run again; False when it ended failed."""
    exception: BaseException
    timed_out: bool = False
