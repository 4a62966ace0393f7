"""The worker's lock rule, read from its source.

The ledger (``worker/ledger.py``) is the one owner of the run bookkeeping:
every field it holds is changed inside ``with self._lock``, and no other code
of the worker package assigns a field of another object (a ``Running``, a
``Finished``). The other classes change only their own fields that one thread
uses, named below with that thread; anything new must be added here with its
reason, or go through the ledger.
"""

from __future__ import annotations

import ast
from pathlib import Path

import django_workhorse.worker as worker_package

PACKAGE = Path(worker_package.__file__).parent

LOCKS = {"_lock", "_cond"}
"""``with self.<one of these>:`` is a critical section."""

MUTATORS = {
    "add",
    "append",
    "appendleft",
    "clear",
    "discard",
    "extend",
    "pop",
    "popitem",
    "popleft",
    "remove",
    "setdefault",
    "update",
}

CONFINED = {
    "RunSpans": {
        "_names": "a cache of span names: whichever thread fills a key stores the same "
        "name in one dict store",
    },
    "Worker": {
        "_session": "the claim loop (after run() opened it)",
        "_stop_deadline": "the claim loop",
        "_db_clock_ahead": "the claim loop (_idle_timeout)",
        "_signals": "the main thread's signal handler",
        "_sync": "run(), before the slot threads exist",
        "_async": "run(), before the asyncio thread exists",
        "_listener": "run(), before the listener thread exists",
        "_heartbeat": "run(), before the heartbeat thread exists",
        "_sidecars": "run(), before the sweeper and sampler threads exist",
        "_retention": "run() (through _start_threads), before the retention thread exists",
        "_vacuum": "run() (through _start_threads), before the vacuum thread exists",
        "_liveness": "run() (through _start_threads), before the liveness thread exists",
    },
    "Heartbeat": {
        "_unreleased": "the heartbeat thread (release_unowned)",
        "_described": "the heartbeat thread (renew)",
        "_described_at": "the heartbeat thread (renew)",
    },
    "Liveness": {
        "pulsed": "the listener thread (proved); the liveness thread only reads the float",
        "leads": "the listener thread (proved); the sweeping threads only read the bool",
    },
    "ClaimSession": {
        "_cursor": "whoever holds its shared connection's lock (shared.lock)",
    },
    "Recycle": {"taken": "whichever thread claims, under the worker's claim lock"},
    "SharedConnection": {
        "conn": "whoever holds self.lock (use(), ready()'s callers, open(), close())",
        "opened": "whoever holds self.lock (open())",
        "_used_at": "whoever holds self.lock (ready()'s callers)",
    },
    "Writer": {"_again": "the writer thread"},
    "Listener": {
        "_conn": "the listener thread",
        "_next_pulse": "the listener thread (_pulse)",
        "pooled": "the listener thread, before it sets self_test_done (read after it)",
    },
    "TurnCursor": {"_cursor": "the periodic thread that made it (one per tick)"},
    "VacuumSweeper": {"_told": "the vacuum thread (tick, called by run)"},
    "AsyncSlots": {
        "_closing": "the asyncio thread (set through call_soon_threadsafe)",
        "_tasks": "the asyncio thread",
    },
    "SyncSlots": {
        "_threads": "_wake_one, whose callers hold self._cond",
        "_waking": "_wake_one, whose callers hold self._cond",
    },
    "HookCalls": {
        "_started": "start(), called by Worker.run before the hook threads exist",
        "_current": "the hook thread (_serve); the watchdog only reads it",
        "_reported": "the watchdog thread (_watch)",
    },
    "Supervisor": "a process of its own: its fields are its main thread's",
}


FOREIGN = {
    ("logs.py", "_install"): "annotates the log record the factory just built",
}
"""Functions that may assign attributes of an object they did not get from
another thread."""


def _self_attribute(node: ast.AST) -> str | None:
    """``x`` for ``self.x``, ``self.x[...]``, ``self.x.y``; else None."""
    while isinstance(node, ast.Subscript | ast.Attribute):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            return node.attr
        node = node.value
    return None


def _foreign_attribute(node: ast.AST) -> bool:
    """An assignment to an attribute of something other than ``self``."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Attribute) and not (
        isinstance(node.value, ast.Name) and node.value.id == "self"
    )


class Changes(ast.NodeVisitor):
    """Every change of a field in a module: (class, method, field, locked, line)."""

    def __init__(self) -> None:
        self.found: list[tuple[str, str, str | None, bool, int]] = []
        self.cls = "<module>"
        self.method = "<module>"
        self.locks = 0

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        outer, self.cls = self.cls, node.name
        self.generic_visit(node)
        self.cls = outer

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        # A nested function counts as its method's; it may run later, on
        # another thread, so a lock around its definition does not count.
        outer, outer_locks = self.method, self.locks
        if outer == "<module>":
            self.method = node.name
        self.locks = 0
        self.generic_visit(node)
        self.method, self.locks = outer, outer_locks

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_With(self, node: ast.With) -> None:
        locked = any(
            isinstance(item.context_expr, ast.Attribute)
            and isinstance(item.context_expr.value, ast.Name)
            and item.context_expr.value.id == "self"
            and item.context_expr.attr in LOCKS
            for item in node.items
        )
        self.locks += locked
        self.generic_visit(node)
        self.locks -= locked

    def _record(self, target: ast.AST, line: int) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._record(element, line)
            return
        name = _self_attribute(target)
        if name is not None:
            self.found.append((self.cls, self.method, name, self.locks > 0, line))
        elif _foreign_attribute(target):
            self.found.append((self.cls, self.method, None, self.locks > 0, line))

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._record(target, node.lineno)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._record(node.target, node.lineno)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._record(node.target, node.lineno)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._record(target, node.lineno)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in MUTATORS:
            name = _self_attribute(func.value)
            if name is not None and not name.startswith("_queue"):
                self.found.append((self.cls, self.method, name, self.locks > 0, node.lineno))
        self.generic_visit(node)


def changes() -> list[tuple[str, str, str, str | None, bool, int]]:
    found = []
    for path in sorted(PACKAGE.glob("*.py")):
        visitor = Changes()
        visitor.visit(ast.parse(path.read_text(), filename=str(path)))
        found.extend((path.name, *change) for change in visitor.found)
    return found


def _events_and_queues() -> set[tuple[str, str]]:
    """(class, field) of fields built in ``__init__`` as thread-safe objects
    (events, queues, locks): calling their methods is not a change."""
    safe = set()
    for path in sorted(PACKAGE.glob("*.py")):
        for cls in ast.walk(ast.parse(path.read_text())):
            if not isinstance(cls, ast.ClassDef):
                continue
            for node in ast.walk(cls):
                if (
                    isinstance(node, ast.Assign)
                    and isinstance(node.value, ast.Call)
                    and ast.unparse(node.value.func).split(".")[-1]
                    in ("Event", "Lock", "Condition", "SimpleQueue", "Linger")
                ):
                    for target in node.targets:
                        name = _self_attribute(target)
                        if name:
                            safe.add((cls.name, name))
    return safe


def test_the_ledger_changes_its_fields_only_under_its_lock():
    outside = [
        f"{path}:{line} {method} changes {field}"
        for path, cls, method, field, locked, line in changes()
        if cls == "Ledger" and method != "__init__" and not locked
    ]
    assert not outside, "\n".join(outside)


def test_no_code_outside_the_ledger_assigns_fields_of_runs_or_results():
    foreign = [
        f"{path}:{line} {cls}.{method}"
        for path, cls, method, field, locked, line in changes()
        if field is None and cls != "Ledger" and (path, method) not in FOREIGN
    ]
    assert not foreign, "\n".join(foreign)


def test_other_classes_change_only_fields_one_thread_uses():
    safe = _events_and_queues()
    unexpected = []
    for path, cls, method, field, locked, line in changes():
        if cls in ("Ledger", "<module>") or field is None or method == "__init__" or locked:
            continue
        if (cls, field) in safe:
            continue
        confined = CONFINED.get(cls, {})
        if isinstance(confined, str) or field in confined:
            continue
        unexpected.append(f"{path}:{line} {cls}.{method} changes self.{field}")
    assert not unexpected, "\n".join(unexpected)


def test_the_rule_is_written_in_the_ledger_docstring():
    from django_workhorse.worker import ledger

    doc = ledger.__doc__
    for field in ("_running", "_writing", "_holding", "_busy", "_freed", "_next_due"):
        assert f"``{field}``" in doc
    assert "under ``_lock``" in doc


def test_the_checker_sees_a_change_outside_the_lock():
    source = """
class Ledger:
    def __init__(self):
        self._running = {}
    def bad(self, run):
        self._running[run.job_id] = run
        run.lease_lost = True
    def good(self, run):
        with self._lock:
            self._running.pop(run.job_id)
"""
    visitor = Changes()
    visitor.visit(ast.parse(source))
    assert [(m, f, locked) for _, m, f, locked, _ in visitor.found] == [
        ("__init__", "_running", False),
        ("bad", "_running", False),
        ("bad", None, False),
        ("good", "_running", True),
    ]


def _module_state_changes(path: Path) -> list[tuple[str, int, bool]]:
    """(function, line, under ``with _lock``) of each change a function makes
    to its module's own state: a ``global`` name assigned, a module-level
    container assigned into, deleted from or changed by a mutating call."""
    tree = ast.parse(path.read_text(), filename=str(path))
    module_names = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    found: list[tuple[str, int, bool]] = []

    def module_level(node: ast.AST, declared: set[str]) -> bool:
        while isinstance(node, ast.Subscript | ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and (node.id in declared or node.id in module_names)

    def walk(node: ast.AST, function: str, declared: set[str], locked: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                if isinstance(child, ast.ClassDef):
                    continue  # fields of instances: the checks above
                names = {
                    name
                    for statement in ast.walk(child)
                    if isinstance(statement, ast.Global)
                    for name in statement.names
                }
                walk(child, child.name, names, False)
                continue
            inner = locked
            if isinstance(child, ast.With) and any(
                ast.unparse(item.context_expr) == "_lock" for item in child.items
            ):
                inner = True
            if function != "<module>":
                targets: list[ast.AST] = []
                if isinstance(child, ast.Assign):
                    targets = list(child.targets)
                elif isinstance(child, ast.AugAssign | ast.AnnAssign):
                    targets = [child.target]
                elif isinstance(child, ast.Delete):
                    targets = list(child.targets)
                for target in targets:
                    plain = isinstance(target, ast.Name)
                    if (plain and target.id in declared) or (
                        not plain and module_level(target, declared)
                    ):
                        found.append((function, child.lineno, inner))
                if (
                    isinstance(child, ast.Call)
                    and isinstance(child.func, ast.Attribute)
                    and child.func.attr in MUTATORS
                    and isinstance(child.func.value, ast.Name)
                    and child.func.value.id in module_names
                ):
                    found.append((function, child.lineno, inner))
            walk(child, function, declared, inner)

    walk(tree, "<module>", set(), False)
    return found


PROCESS_STATE = [
    PACKAGE.parent / "core" / "registry.py",
    *sorted(PACKAGE.glob("*.py")),
]
"""The registry (read by every thread of a worker) and the worker's modules:
their module-level state is the process's, shared by all its threads."""


def test_process_wide_state_changes_only_under_its_modules_lock():
    outside = [
        f"{path.name}:{line} {function}"
        for path in PROCESS_STATE
        for function, line, locked in _module_state_changes(path)
        if not locked
    ]
    assert not outside, "\n".join(outside)


def test_the_process_state_checker_sees_a_change_outside_the_lock(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        "import threading\n_lock = threading.Lock()\n_jobs = {}\nACTIVE = None\n"
        "def good(k, v):\n    global ACTIVE\n    with _lock:\n        _jobs[k] = v\n"
        "        ACTIVE = v\n"
        "def bad(k, v):\n    global ACTIVE\n    _jobs.pop(k)\n    ACTIVE = v\n"
    )
    assert [(f, locked) for f, _, locked in _module_state_changes(source)] == [
        ("good", True),
        ("good", True),
        ("bad", False),
        ("bad", False),
    ]
