"""Imports inside ``django_workhorse`` run one way: no module imports, however
indirectly, a module that imports it.

Every import counts, at the top of a module or inside a function (a
deferred import is still a circle: it only hides it until the call); only
those under ``if TYPE_CHECKING:`` do not, since they never run. ``from .
import store`` is an import of ``store``, not of the package.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "django_workhorse"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def _imported(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The modules of the package that ``node`` (in ``module``) imports."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in MODULES}
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level:
        base = base[: len(base) - (node.level - 1)]
        target = ".".join([*base, node.module] if node.module else base)
    else:
        target = node.module or ""
    submodules = {f"{target}.{a.name}" for a in node.names} & MODULES.keys()
    found = set(submodules)
    if target in MODULES and len(submodules) < len(node.names):
        found.add(target)
    return found


def _imports(module: str) -> set[str]:
    """What ``module`` imports of the package, anywhere but under TYPE_CHECKING."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit_node(other)
            else:
                visit_node(child)

    def visit_node(node: ast.AST) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.update(_imported(module, node))
        else:
            visit(node)

    visit(ast.parse(MODULES[module].read_text()))
    return found - {module}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return groups


def test_no_module_of_the_package_imports_itself_through_others():
    graph = {module: _imports(module) for module in MODULES}
    found = circles(graph)
    described = [
        "; ".join(f"{m} -> {', '.join(sorted(graph[m] & set(group)))}" for m in group)
        for group in found
    ]
    assert not found, "import circles:\n" + "\n".join(described)


def test_the_checker_sees_a_circle_through_a_deferred_import():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_checker_counts_imports_inside_functions_but_not_under_type_checking():
    imports = _imports("django_workhorse.operations.servable")
    assert "django_workhorse.tasks.backend" in imports  # inside task_queues
    # context.py imports worker.outcomes for its annotations only
    assert "django_workhorse.worker.outcomes" not in _imports("django_workhorse.context")
    assert "django_workhorse.core.registry" not in _imports("django_workhorse.exceptions")
