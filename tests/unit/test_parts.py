"""The package's parts import one way, as docs/ARCHITECTURE.md draws them.

A part is a subpackage of ``django_workhorse`` (``core``, ``db``,
``operations``, ``worker``, ``tasks``, ``admin``, ``management``) or a module
at its root. Each may import only the parts below it; what sits on top (the
public surface, the test helpers, Django's entry points) may import any.
Imports count as in the circle check: inside functions too, not under
``if TYPE_CHECKING:``.
"""

from __future__ import annotations

from tests.unit.test_import_circles import MODULES, _imports

LEAVES = {"exceptions", "states"}
BELOW: dict[str, set[str]] = {
    "exceptions": set(),
    "states": set(),
    "db": LEAVES,
    "models": LEAVES,
    "core": {"db", *LEAVES},
    "context": {"core", "db", *LEAVES},
    "operations": {"context", "core", "db", "models", *LEAVES},
    "worker": {"operations", "context", "core", "db", "models", *LEAVES},
    "tasks": {"worker", "operations", "context", "core", "db", "models", *LEAVES},
}
"""Each part below the top, and the parts it may import."""

TOP = {"__init__", "old_paths", "apps", "jobs", "testing", "admin", "management", "migrations"}
"""The public surface, the old module paths, the test helpers and Django's
entry points (the app config, the app's jobs, the admin, the commands, the
migrations): they may import any part, and no part below imports them."""

CROSSINGS = {
    ("operations.servable", "tasks.backend"): "the queues the Tasks backends name, "
    "read when a worker starts or a check runs (the Tasks API is imported only "
    "when a workhorse backend is configured)",
}
"""Imports across the rule, each with its reason."""


def _part(module: str) -> str:
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def _short(module: str) -> str:
    return module.removeprefix("django_workhorse.")


def test_every_module_sits_in_a_known_part():
    unknown = sorted(m for m in MODULES if _part(m) not in BELOW and _part(m) not in TOP)
    assert not unknown, (
        f"{unknown}: a new module belongs in a part (core, db, operations, worker, "
        "tasks, admin); the package's root holds the public face only"
    )


def _crossings(graph: dict[str, set[str]]) -> list[str]:
    """Each import in ``graph`` (module -> what it imports) against the rule."""
    found = []
    for module, imports in graph.items():
        part = _part(module)
        if part in TOP:
            continue
        for imported in imports:
            target = _part(imported)
            if target == part or target in BELOW[part]:
                continue
            if (_short(module), _short(imported)) in CROSSINGS:
                continue
            found.append(f"{_short(module)} ({part}) imports {_short(imported)} ({target})")
    return sorted(found)


def test_each_part_imports_only_the_parts_below_it():
    crossings = _crossings({module: _imports(module) for module in MODULES})
    assert not crossings, "\n".join(crossings)


def test_each_crossing_of_the_rule_is_still_there():
    stale = [
        f"{module} -> {imported}"
        for module, imported in CROSSINGS
        if f"django_workhorse.{imported}" not in _imports(f"django_workhorse.{module}")
    ]
    assert not stale, f"{stale}: no longer imported, so no longer an exception to the rule"


def test_the_rule_finds_an_import_of_a_part_above():
    graph = {
        "django_workhorse.core.definitions": {"django_workhorse.worker.executor"},
        "django_workhorse.worker.executor": {"django_workhorse.core.definitions"},
        "django_workhorse.testing": {"django_workhorse.worker.executor"},
    }
    assert _crossings(graph) == ["core.definitions (core) imports worker.executor (worker)"]


def test_no_two_modules_share_a_name():
    names: dict[str, list[str]] = {}
    for module in MODULES:
        if MODULES[module].name != "__init__.py" and _part(module) != "migrations":
            names.setdefault(module.rsplit(".", 1)[-1], []).append(_short(module))
    shared = {name: sorted(where) for name, where in names.items() if len(where) > 1}
    assert not shared, f"modules that share a name: {shared}"
