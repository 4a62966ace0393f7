"""The queues the project's code names, read from its source files.

``manage.py check`` (``workhorse.W010``) compares them with the queues a
worker started without ``--queues`` serves, to catch a typo such as
``.options(queue="emial")`` before its jobs wait for good. The source is read,
not imported: what ``check`` reports must not depend on which modules the
checking process happened to import, and importing a project's every module
could run anything. Only literal names are seen (``queue="email"`` in a call
of ``job(...)``, ``something.job(...)`` or ``.options(...)``); a name built
at run time is the worker's start warning's to catch.
"""

from __future__ import annotations

import ast
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..core.discovery import is_test_module

CALLS = frozenset({"job", "options"})
"""The callables whose ``queue=`` keyword names a queue: the ``@job``
decorator (``workhorse.job``) and a definition's ``.options``."""

SKIPPED_FOLDERS = frozenset({"migrations", "node_modules", "__pycache__"})


@dataclass(frozen=True)
class QueueMention:
    """One literal queue name in the project's source."""

    queue: str
    path: Path
    line: int
    using: str | None = None
    """The literal ``using=`` of the same call (the database alias the job is bound to)."""

    def place(self, root: Path | None = None) -> str:
        """``path:line``, relative to ``root`` when it is inside it."""
        shown = self.path
        if root is not None and self.path.is_relative_to(root):
            shown = self.path.relative_to(root)
        return f"{shown}:{self.line}"


def _installed_roots() -> list[Path]:
    """Where installed packages and the standard library live: not the project's."""
    paths = sysconfig.get_paths()
    roots = {Path(paths[key]).resolve() for key in ("purelib", "platlib", "stdlib") if key in paths}
    roots.add(Path(__file__).resolve().parent)  # django-workhorse itself, installed editable or not
    return sorted(roots)


def project_folders() -> list[Path]:
    """The folders of the project's own code: each installed app outside the
    installed packages, and the package of the settings module."""
    from django.apps import apps
    from django.conf import settings

    installed = _installed_roots()
    folders: set[Path] = set()
    candidates = [Path(config.path) for config in apps.get_app_configs()]
    top = (getattr(settings, "SETTINGS_MODULE", None) or "").split(".")[0]
    package = sys.modules.get(top)
    candidates.extend(Path(p) for p in getattr(package, "__path__", None) or ())
    for folder in candidates:
        folder = folder.resolve()
        if folder.is_dir() and not any(folder.is_relative_to(r) for r in installed):
            folders.add(folder)
    # A folder inside another is read with it.
    return sorted(f for f in folders if not any(f != o and f.is_relative_to(o) for o in folders))


def source_files(folder: Path) -> Iterator[Path]:
    """The Python files under ``folder``, test modules and migrations left out."""
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(folder).with_suffix("").parts
        if any(p in SKIPPED_FOLDERS or p.startswith(".") for p in parts):
            continue
        if is_test_module(".".join(parts)):
            continue
        yield path


def mentions_in(source: str, path: Path) -> list[QueueMention]:
    """The literal ``queue=`` names of ``CALLS`` calls in one file's ``source``
    (none when it does not parse: the import says why, not ``check``)."""
    try:
        tree = ast.parse(source, str(path))
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if called not in CALLS:
            continue
        literal = {
            k.arg: k.value.value
            for k in node.keywords
            if isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)
        }
        if "queue" in literal:
            line = next(k.value.lineno for k in node.keywords if k.arg == "queue")
            found.append(QueueMention(literal["queue"], path, line, literal.get("using")))
    return found


def project_mentions() -> list[QueueMention]:
    """Every literal queue name of the project's source, by file and line."""
    found: list[QueueMention] = []
    for folder in project_folders():
        for path in source_files(folder):
            try:
                source = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            found.extend(mentions_in(source, path))
    return found
