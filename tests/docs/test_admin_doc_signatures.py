"""The action table of admin.md writes each ``Admin`` action as it is called:
its parameters, their defaults, and which must be passed by keyword."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from django_workhorse import Admin

DOCS = Path(__file__).resolve().parents[2] / "docs"
ROW_CALL = re.compile(r"^\| `(retry|promote|cancel)\(([^)]*)\)` \|", re.MULTILINE)


def documented_calls() -> dict[str, str]:
    return dict(ROW_CALL.findall((DOCS / "admin.md").read_text()))


def signature_as_written(method: str) -> str:
    """``Admin.method``'s parameters as the table writes them (``id`` for the job id)."""
    parameters = list(inspect.signature(getattr(Admin, method)).parameters.values())[1:]
    parts: list[str] = []
    for parameter in parameters:
        if parameter.kind is parameter.KEYWORD_ONLY and "*" not in parts:
            parts.append("*")
        name = "id" if parameter.name == "job_id" else parameter.name
        default = parameter.default
        parts.append(name if default is parameter.empty else f"{name}={default!r}")
    return ", ".join(parts)


def test_the_action_table_writes_each_action_with_its_signature():
    calls = documented_calls()
    assert set(calls) == {"retry", "promote", "cancel"}
    for method, written in calls.items():
        assert written == signature_as_written(method), method
