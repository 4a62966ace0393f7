"""Payloads and results are JSON: encoded here, refused here when they are not."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from .exceptions import InvalidPayloadError


def _first_mismatch(value: Any, path: str) -> str | None:
    """The path and reason of the first part of ``value`` that is not plain JSON."""
    if value is None or isinstance(value, bool | str):
        return None
    if isinstance(value, int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} is {value!r}, which JSON cannot hold"
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _first_mismatch(item, f"{path}[{index}]")
            if found:
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path} has the key {key!r}; JSON object keys must be strings"
            found = _first_mismatch(item, f"{path}[{key!r}]")
            if found:
                return found
        return None
    hint = {
        "tuple": "pass a list",
        "set": "pass a sorted list",
        "datetime": "pass value.isoformat()",
        "date": "pass value.isoformat()",
        "Decimal": "pass str(value)",
        "UUID": "pass str(value)",
    }.get(type(value).__name__, "pass the id or a JSON-friendly form of it")
    return f"{path} is a {type(value).__name__}, which is not JSON; {hint}"


def encode_payload(job_name: str, payload: Mapping[str, Any]) -> str:
    """The payload as JSON text, or InvalidPayloadError naming the offending field.

    Only values that come back equal after a JSON round trip are accepted, so
    the handler sees exactly what the caller passed. Nothing is pickled.
    """
    if not isinstance(payload, Mapping):
        raise InvalidPayloadError(
            f"the payload of job {job_name!r} must be a dict of keyword arguments, "
            f"got {type(payload).__name__}"
        )
    problem = _first_mismatch(dict(payload), "payload")
    if problem:
        raise InvalidPayloadError(f"job {job_name!r}: {problem}")
    return json.dumps(payload, allow_nan=False, separators=(",", ":"))


def encode_result(value: Any) -> str:
    """A handler's return value as JSON text; TypeError-like error when it is not JSON."""
    problem = _first_mismatch(value, "the return value")
    if problem:
        raise InvalidPayloadError(f"{problem}; return JSON-friendly data from handlers")
    return json.dumps(value, allow_nan=False, separators=(",", ":"))
