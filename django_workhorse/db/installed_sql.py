"""Whether the SQL functions installed in a database are the package's.

A function changed by hand (``CREATE OR REPLACE`` in psql, a restored dump of
another version, a hot fix never turned into a migration) keeps working
until it does not, and ``migrate`` has nothing to apply. So ``manage.py
check --database`` (``workhorse.E005``) and ``runworker`` compare each
installed ``workhorse_*`` function with what the package's migrations
create: one query of ``pg_proc`` against digests computed once per process
from the ``.sql`` text the migrations run.

What is compared, per function name: a sha256 of its body (``prosrc``, the
text between the dollar quotes, which PostgreSQL keeps as written: the
digest ``docs/schema.sql`` lists), and the attributes a hand edit may change
without touching the body: language, volatility, STRICT, SECURITY DEFINER,
PARALLEL and ``SET`` settings. Argument and result types are not (PostgreSQL
rewrites them, e.g. ``int`` to ``integer``); a second function of a package
name, which a ``CREATE OR REPLACE`` with other arguments makes, is reported.

The comparison is only meaningful when the database's django_workhorse
migrations are exactly the package's: with some pending, ``migrate`` is the
fix (``workhorse.W002``); with some the package does not know, a newer
package migrated the database and its functions are its own.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from . import store

APP = "django_workhorse"

REPAIR_COMMAND = "manage.py workhorse_repair_sql"

_STATEMENT = re.compile(
    r"CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(?P<name>workhorse_\w+)\s*\((?P<header>.*?)"
    r"\bAS\s+(?P<tag>\$\w*\$)(?P<body>.*?)(?P=tag)(?P<tail>[^;]*);",
    re.S | re.I,
)
_DROP = re.compile(r"DROP\s+FUNCTION\s+(?:IF\s+EXISTS\s+)?(workhorse_\w+)", re.I)
_COMMENT = re.compile(r"--[^\n]*")
_ATTRIBUTES_START = re.compile(
    r"\b(LANGUAGE|IMMUTABLE|STABLE|VOLATILE|STRICT|CALLED|SECURITY|PARALLEL|SET|COST|ROWS"
    r"|LEAKPROOF|NOT\s+LEAKPROOF|WINDOW|EXTERNAL)\b",
    re.I,
)
_VOLATILITY = {"immutable": "i", "stable": "s", "volatile": "v"}
_PARALLEL = {"safe": "s", "restricted": "r", "unsafe": "u"}


@dataclass(frozen=True, slots=True)
class FunctionDefinition:
    """One function as the package creates it."""

    name: str
    body_sha256: str
    """sha256 of the body as written between its dollar quotes."""
    attributes: str
    """Language, volatility, strictness, security, parallel safety and
    settings, in the form :func:`catalog_attributes` gives the catalog's;
    ``{schema}`` stands for the schema the function is installed in."""
    statement: str
    """The ``CREATE OR REPLACE FUNCTION`` statement that makes it."""
    source: str
    """The whole SQL of the migration step that makes it: the statement and
    what follows it (the ``search_path`` of a SECURITY DEFINER function,
    the REVOKE from PUBLIC), which a re-creation runs again."""


def catalog_attributes(
    language: str,
    volatility: str,
    strict: bool,
    definer: bool,
    parallel: str,
    settings: list[str],
) -> str:
    """The attributes of a function in one comparable string."""
    return (
        f"language={language} volatility={volatility} strict={strict} "
        f"definer={definer} parallel={parallel} set={','.join(sorted(settings))}"
    )


def _file_attributes(header: str, tail: str, source: str, name: str) -> str:
    """:func:`catalog_attributes` of the text around a function's body."""
    text = _COMMENT.sub(" ", header)
    returns = re.search(r"\bRETURNS\s+TABLE\s*\(", text, re.I)
    start = returns.end() if returns else 0
    if returns:  # skip the column list, whose names may be any word
        depth = 1
        while depth and start < len(text):
            depth += {"(": 1, ")": -1}.get(text[start], 0)
            start += 1
    found = _ATTRIBUTES_START.search(text, start)
    words = (text[found.start() :] if found else "") + " " + _COMMENT.sub(" ", tail)
    language = re.search(r"\bLANGUAGE\s+'?(\w+)", words, re.I)
    volatility = re.search(r"\b(IMMUTABLE|STABLE|VOLATILE)\b", words, re.I)
    parallel = re.search(r"\bPARALLEL\s+(SAFE|RESTRICTED|UNSAFE)\b", words, re.I)
    settings = [
        f"{key.lower()}={value.strip(chr(39))}"
        for key, value in re.findall(r"\bSET\s+(\w+)\s*(?:=|\bTO\b)\s*('[^']*'|\S+)", words, re.I)
    ]
    # A SECURITY DEFINER function pins its search_path to the schema it is
    # installed in, by an ALTER FUNCTION after it (see the .sql files).
    pinned = rf"ALTER\s+FUNCTION\s+{name}\b[^;]*?\bSET\s+search_path\s*=\s*%I,\s*pg_temp"
    if re.search(pinned, source, re.I):
        settings.append("search_path={schema}, pg_temp")
    return catalog_attributes(
        language.group(1).lower() if language else "sql",
        _VOLATILITY[volatility.group(1).lower()] if volatility else "v",
        bool(re.search(r"\bSTRICT\b|\bRETURNS\s+NULL\s+ON\s+NULL\s+INPUT\b", words, re.I)),
        bool(re.search(r"\bSECURITY\s+DEFINER\b", words, re.I)),
        _PARALLEL[parallel.group(1).lower()] if parallel else "u",
        settings,
    )


def _statements(sql: Any) -> list[str]:
    """The SQL texts of a RunSQL operation's forward ``sql``."""
    if isinstance(sql, str):
        return [sql]
    return [part if isinstance(part, str) else part[0] for part in sql]


@cache
def package_migrations() -> tuple[str, ...]:
    """The names of the package's django_workhorse migrations, in order."""
    return tuple(name for name, _ in _plan())


def _plan() -> list[tuple[str, Any]]:
    from django.db.migrations.loader import MigrationLoader

    loader = MigrationLoader(None, ignore_no_migrations=True)
    leaves = loader.graph.leaf_nodes(APP)
    plan = [node for leaf in leaves for node in loader.graph.forwards_plan(leaf)]
    seen: dict[str, Any] = {}
    for app, name in plan:
        if app == APP and name not in seen:
            seen[name] = loader.graph.nodes[(app, name)]
    return list(seen.items())


@cache
def package_functions() -> dict[str, FunctionDefinition]:
    """Every function the package's migrations leave installed, by name:
    the last statement that creates it, in migration order (a DROP removes it)."""
    from django.db.migrations import RunSQL

    functions: dict[str, FunctionDefinition] = {}
    for _, migration in _plan():
        for operation in migration.operations:
            if not isinstance(operation, RunSQL):
                continue
            for sql in _statements(operation.sql):
                events = [(m.start(), "drop", m) for m in _DROP.finditer(sql)]
                events += [(m.start(), "create", m) for m in _STATEMENT.finditer(sql)]
                for _, kind, match in sorted(events, key=lambda event: event[0]):
                    if kind == "drop":
                        functions.pop(match.group(1), None)
                        continue
                    name = match.group("name")
                    functions[name] = FunctionDefinition(
                        name=name,
                        body_sha256=hashlib.sha256(match.group("body").encode()).hexdigest(),
                        attributes=_file_attributes(
                            match.group("header"), match.group("tail"), sql, name
                        ),
                        statement=match.group(0),
                        source=sql,
                    )
    return functions


@dataclass(frozen=True, slots=True)
class Drift:
    """How the installed functions differ from the package's."""

    missing: list[str]
    changed: list[str]
    extra: list[str]
    """Functions named ``workhorse_*`` the package does not make, each with
    its arguments (a second function of a package name among them), the
    name quoted by the database when it needs quotes."""
    extra_oids: tuple[int, ...] = ()
    """The catalog ids of ``extra``, by which the repair drops them
    (``store.drop_function``): a name read from the catalog is never SQL."""

    def __bool__(self) -> bool:
        return bool(self.missing or self.changed or self.extra)

    def describe(self) -> str:
        parts = []
        for label, names in (
            ("missing", self.missing),
            ("changed", self.changed),
            ("not the package's", self.extra),
        ):
            if names:
                parts.append(f"{label}: {', '.join(names)}")
        return "; ".join(parts)


def drift(cursor: store.Cursor) -> Drift:
    """Compare the functions installed in ``cursor``'s database with the package's."""
    expected = package_functions()
    installed = store.installed_functions(cursor)
    seen: set[str] = set()
    changed: list[str] = []
    extra: list[store.InstalledFunction] = []
    for function in installed:
        definition = expected.get(function.name)
        if definition is None or function.name in seen:
            extra.append(function)
            continue
        seen.add(function.name)
        attributes = catalog_attributes(
            function.language,
            function.volatility,
            function.strict,
            function.definer,
            function.parallel,
            function.settings,
        )
        wanted = definition.attributes.replace("{schema}", function.schema)
        if (function.body_sha256, attributes) != (definition.body_sha256, wanted):
            changed.append(function.name)
    missing = sorted(set(expected) - seen)
    extra.sort(key=lambda function: function.signature)
    return Drift(
        missing=missing,
        changed=sorted(changed),
        extra=[function.signature for function in extra],
        extra_oids=tuple(function.oid for function in extra),
    )


def applied_migrations(cursor: store.Cursor) -> list[str]:
    """The django_workhorse migrations applied to the database: none before
    the first ``migrate``."""
    return store.applied_migrations(cursor, APP)


def migrations_differ(cursor: store.Cursor) -> bool:
    """Whether the database's django_workhorse migrations are not exactly the
    package's (some pending, or some only a newer package knows)."""
    return set(store.applied_migrations(cursor, APP)) != set(package_migrations())


def pending_migrations(cursor: store.Cursor) -> list[str]:
    """The package's django_workhorse migrations not applied to the database."""
    applied = set(store.applied_migrations(cursor, APP))
    return [name for name in package_migrations() if name not in applied]


def pending_message(cursor: store.Cursor, alias: str) -> str | None:
    """What to say of a database some of the package's migrations are not
    applied to (its functions may be older ones), or None when all are."""
    pending = pending_migrations(cursor)
    if not pending:
        return None
    found = drift(cursor)
    differing = f"; its SQL functions are not this package's yet ({found.describe()})"
    which = (
        f"migration {pending[0]} is"
        if len(pending) == 1
        else f"migrations {', '.join(pending)} are"
    )
    return (
        f"database {alias!r}: the django_workhorse {which} not applied"
        f"{differing if found else ''}: run `manage.py migrate django_workhorse`"
    )


def newer_migrations(cursor: store.Cursor) -> list[str]:
    """The django_workhorse migrations applied to the database that this
    package does not have: a newer release migrated it."""
    known = set(package_migrations())
    return [name for name in store.applied_migrations(cursor, APP) if name not in known]


def problem(cursor: store.Cursor, alias: str) -> str | None:
    """Why the functions installed in database ``alias`` are not the package's,
    with the fix; None when they are, or when migrations differ (see above)."""
    if migrations_differ(cursor):
        return None
    found = drift(cursor)
    if not found:
        return None
    return (
        f"database {alias!r}: its django-workhorse SQL functions are not the ones this "
        f"package installs ({found.describe()}) and no migration is pending, so the "
        f"database was changed by hand: run `{REPAIR_COMMAND} --database {alias}` to "
        "re-create them from the package"
    )
