"""Payloads and results are JSON: encoded here, refused here when they are not."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from ..exceptions import InvalidPayloadError
from .limits import PAYLOAD_MAX_BYTES, PAYLOAD_MAX_DEPTH, PAYLOAD_MAX_INT_DIGITS, text_problem

FLOAT_EXACT_LIMIT = 1e16
"""Floats at or above this magnitude do not survive a trip through jsonb."""

_INT_LIMIT = 10**PAYLOAD_MAX_INT_DIGITS
_INT_SAFE_BITS = 3 * PAYLOAD_MAX_INT_DIGITS
"""Below this many bits an integer has fewer digits than the limit (10**n > 2**(3n))."""


_ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"))
"""Payloads and results as compact JSON. One encoder made once: ``json.dumps``
with any argument builds a new encoder on every call, which cost 2.7 us of the
4.1 us an empty payload took to encode, on every enqueue and every result."""


def _string_problem(value: str, path: str) -> str | None:
    """Why PostgreSQL's jsonb cannot store this string, or None."""
    return text_problem(value, path)


def _first_mismatch(value: Any, path: str, depth: int = 0) -> str | None:
    """The path and reason of the first part of ``value`` that is not plain JSON
    or breaks a payload limit (integer digits, nesting depth)."""
    # The exact built-in types first, most common first: one type() look-up
    # where the isinstance chain below took up to seven calls for a dict.
    kind = type(value)
    if kind is str:
        return _string_problem(value, path)
    if kind is dict and depth < PAYLOAD_MAX_DEPTH:
        return _dict_mismatch(value, path, depth)
    if value is None or kind is bool:  # bool cannot be subclassed
        return None
    if isinstance(value, int):
        if value.bit_length() > _INT_SAFE_BITS and abs(value) >= _INT_LIMIT:
            return (
                f"{path} is an integer of more than {PAYLOAD_MAX_INT_DIGITS} digits, beyond what "
                "Python reads back from JSON; pass it as a string"
            )
        return None
    if isinstance(value, str):
        return _string_problem(value, path)
    if isinstance(value, float):
        if not math.isfinite(value):
            return f"{path} is {value!r}, which JSON cannot hold"
        if abs(value) >= FLOAT_EXACT_LIMIT:
            # jsonb keeps numbers as numeric and prints this one without a
            # fraction, so it would come back as an int of another value.
            return (
                f"{path} is the float {value!r}, which PostgreSQL's jsonb would return as an "
                "integer; pass an int or a string"
            )
        return None
    if isinstance(value, list | dict) and depth >= PAYLOAD_MAX_DEPTH:
        return (
            f"{path} nests lists and objects more than {PAYLOAD_MAX_DEPTH} deep; "
            "flatten the data or store it elsewhere and pass its id"
        )
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _first_mismatch(item, f"{path}[{index}]", depth + 1)
            if found:
                return found
        return None
    if isinstance(value, dict):
        return _dict_mismatch(value, path, depth)
    article = indefinite_article(type(value).__name__)
    hint = {
        "tuple": "pass a list",
        "set": "pass a sorted list",
        "datetime": "pass value.isoformat()",
        "date": "pass value.isoformat()",
        "Decimal": "pass str(value)",
        "UUID": "pass str(value)",
    }.get(type(value).__name__, "pass the id or a JSON-friendly form of it")
    return f"{path} is {article} {type(value).__name__}, which is not JSON; {hint}"


def indefinite_article(word: str) -> str:
    """ "a" or "an" before a type's name, as it is said: "a User", "a UUID",
    "an Undefined", "an HTTPResponse", "an int". Spelled-out capitals are
    read as letters; a "u" read as "you" (u, a consonant, a vowel; "uni")
    takes "a"."""
    if word[:2].isupper():  # an acronym (or one capital): its first letter's name
        return "an" if word[0] in "AEFHILMNORSX" else "a"
    lower = word.lower()
    if lower.startswith("u"):
        you = re.match(r"u(ni|[bcdfghjklmpqrstvwxz][aeiouy])", lower)
        return "a" if you else "an"
    return "an" if lower[:1] in ("a", "e", "i", "o") else "a"


def _dict_mismatch(value: dict[Any, Any], path: str, depth: int) -> str | None:
    """``_first_mismatch`` of an object's keys and values.

    ASCII strings without NUL, small ints, booleans and None pass without a
    call or a path string made for them: most payloads hold nothing else.
    """
    for key, item in value.items():
        if not (type(key) is str and key.isascii() and "\x00" not in key):
            if not isinstance(key, str):
                return f"{path} has the key {key!r}; JSON object keys must be strings"
            found = _string_problem(key, f"{path} key {key!r}")
            if found:
                return found
        kind = type(item)
        if (
            (kind is str and item.isascii() and "\x00" not in item)
            or (kind is int and item.bit_length() <= _INT_SAFE_BITS)
            or item is None
            or kind is bool
        ):
            continue
        found = _first_mismatch(item, f"{path}[{key!r}]", depth + 1)
        if found:
            return found
    return None


def search_problem(value: Any, path: str = "payload") -> str | None:
    """Why PostgreSQL's jsonb cannot hold a payload search object, or None:
    a NUL character or a lone surrogate in a key or a string, or nesting
    deeper than a payload may be. PostgreSQL would refuse such an object
    with a DataError; no stored payload could contain it anyway. Numbers and
    other values are left to the search, which compares them as jsonb does."""
    pending = [(value, path, 0)]
    while pending:
        item, where, depth = pending.pop()
        if isinstance(item, str):
            problem = text_problem(item, where)
        elif isinstance(item, dict | list) and depth >= PAYLOAD_MAX_DEPTH:
            problem = f"{where} nests lists and objects more than {PAYLOAD_MAX_DEPTH} deep"
        elif isinstance(item, dict):
            problem = None
            for key, inner in item.items():
                if isinstance(key, str):
                    problem = problem or text_problem(key, f"{where} key {key!r}")
                pending.append((inner, f"{where}[{key!r}]", depth + 1))
        elif isinstance(item, list):
            problem = None
            pending.extend((inner, f"{where}[{i}]", depth + 1) for i, inner in enumerate(item))
        else:
            problem = None
        if problem:
            return problem
    return None


def checked_payload(job_name: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The payload as a plain dict once every value in it is plain JSON within
    the limits, or InvalidPayloadError naming the offending field (its size
    is checked when it is encoded)."""
    if type(payload) is not dict:
        if not isinstance(payload, Mapping):
            raise InvalidPayloadError(
                f"the payload of job {job_name!r} must be a dict of keyword arguments, "
                f"got {type(payload).__name__}"
            )
        payload = dict(payload)
    problem = _first_mismatch(payload, "payload")
    if problem:
        raise InvalidPayloadError(f"job {job_name!r}: {problem}")
    return payload


def encode_payload(job_name: str, payload: Mapping[str, Any]) -> str:
    """The payload as JSON text, or InvalidPayloadError naming the offending field.

    Only values that come back equal after a JSON round trip are accepted, so
    the handler sees exactly what the caller passed; no other serialization is used.
    """
    return encode_payloads(job_name, [checked_payload(job_name, payload)])[0]


def encode_payloads(job_name: str, payloads: list[dict[str, Any]]) -> list[str]:
    """Payloads that ``checked_payload`` passed, each as JSON text, in order."""
    texts = []
    for index, payload in enumerate(payloads):
        text = _ENCODER.encode(payload)
        # ASCII (the encoder escapes the rest): characters are bytes.
        if len(text) > PAYLOAD_MAX_BYTES:
            _refuse_size(job_name, len(text), index, len(payloads))
        texts.append(text)
    return texts


def _refuse_size(job_name: str, size: int, index: int, count: int) -> None:
    """Refuse the payload at ``index`` of ``count``, ``size`` bytes of JSON."""
    error = InvalidPayloadError(
        f"job {job_name!r}: the payload is {size} bytes of JSON, more than the limit of "
        f"{PAYLOAD_MAX_BYTES}; store large data elsewhere and pass its id"
    )
    if count == 1:
        raise error
    raise InvalidPayloadError(f"payloads[{index}] of {count}: {error}")


def encode_payload_array(job_name: str, payloads: list[dict[str, Any]]) -> str:
    """Payloads that ``checked_payload`` passed, as one JSON array.

    One call of the encoder for the whole list: encoding each payload on its
    own and joining the texts cost ~2 us a payload more (the encoder's set-up
    on every call), a third of the client's time in a batch of 1,000. Only a
    list longer than one payload's limit can hold a payload over it; only then
    is each measured, and the first one over it named by its position.
    """
    text = _ENCODER.encode(payloads)
    if len(text) > PAYLOAD_MAX_BYTES:
        encode_payloads(job_name, payloads)
    return text


def encode_one_payload_array(job_name: str, payload: dict[str, Any]) -> str:
    """``encode_payload_array`` of one payload ``checked_payload`` passed: what
    every ``enqueue()`` sends. An empty payload (a job without arguments) is
    not encoded at all."""
    if not payload:
        return "[{}]"
    text = _ENCODER.encode(payload)
    if len(text) > PAYLOAD_MAX_BYTES:
        _refuse_size(job_name, len(text), 0, 1)
    return "[" + text + "]"


def result_problem(value: Any) -> str | None:
    """Why a handler's return value cannot be stored, or None: what
    ``encode_result`` refuses, found without encoding (the Django Tasks
    backend reports the refusal in ``task_finished`` before the worker records it)."""
    if value is None:
        return None
    try:
        problem = _first_mismatch(value, "the return value")
    except Exception as exc:  # a subclass's own methods: see _unreadable
        problem = _unreadable(exc)
    return f"{problem}; return JSON-friendly data from handlers" if problem else None


def _unreadable(exc: Exception) -> str:
    """The problem of a return value whose own code raised while it was read
    (a ``dict`` subclass whose ``items()`` raises, say): the handler's value
    must fail its own run, not the worker thread that records it."""
    try:
        detail = str(exc)
    except Exception:
        detail = "(its message cannot be read either)"
    return f"the return value cannot be read as JSON: {type(exc).__name__}: {detail[:1000]}"


def encode_result(value: Any) -> str:
    """A handler's return value as JSON text; InvalidPayloadError when it is
    not JSON, or when reading it raised."""
    if value is None:
        return "null"
    problem = result_problem(value)
    if problem:
        raise InvalidPayloadError(problem)
    try:
        return _ENCODER.encode(value)
    except Exception as exc:
        raise InvalidPayloadError(
            f"{_unreadable(exc)}; return JSON-friendly data from handlers"
        ) from exc
