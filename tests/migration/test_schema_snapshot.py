"""The migrations reproduce ``docs/schema.sql``, the reviewed picture of the schema.

Every domain, table, column, constraint, index and function (with the
settings it runs under) that the migrations install is written out from the
catalog in a stable, version-independent form (functions as their signature
and a digest of their body, so the text of each function lives only in its
own .sql file). A change to the schema therefore
shows up as a diff of ``docs/schema.sql`` in review. After an intended change,
rewrite the file with ``make schema`` and read the diff.
"""

import hashlib
import os
from pathlib import Path

import pytest
from django.db import connection

SNAPSHOT = Path(__file__).resolve().parents[2] / "docs" / "schema.sql"
REWRITE = os.environ.get("WORKHORSE_WRITE_SCHEMA") == "1"

pytestmark = pytest.mark.django_db

RELATIONS = """
    SELECT c.oid, c.relname, c.relkind, coalesce(array_to_string(c.reloptions, ', '), ''),
           CASE WHEN c.relkind = 'p' THEN pg_get_partkeydef(c.oid) END,
           (SELECT p.relname FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent
            WHERE i.inhrelid = c.oid),
           pg_get_expr(c.relpartbound, c.oid)
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() AND c.relname LIKE 'workhorse\\_%%'
      AND c.relkind IN ('r', 'p')
      -- Daily partitions come and go with the calendar; default ones stay.
      AND (NOT c.relispartition OR c.relname LIKE '%%\\_default')
    ORDER BY c.relname
"""


def describe_schema(cursor) -> str:
    """The workhorse schema as SQL-like text, sorted by name."""
    out = ["-- The schema the migrations install; rewritten by `make schema`.", ""]
    cursor.execute(
        """
        SELECT t.typname, format_type(t.typbasetype, t.typtypmod),
               (SELECT string_agg(format(' CONSTRAINT %s %s', c.conname,
                                         pg_get_constraintdef(c.oid)), '' ORDER BY c.conname)
                FROM pg_constraint c WHERE c.contypid = t.oid)
        FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
        WHERE n.nspname = current_schema() AND t.typtype = 'd' AND t.typname LIKE 'workhorse\\_%%'
        ORDER BY 1
        """
    )
    out += [f"CREATE DOMAIN {name} AS {base}{rules or ''};" for name, base, rules in cursor]
    out.append("")
    cursor.execute(RELATIONS)
    for oid, name, kind, options, partition_key, parent, bound in cursor.fetchall():
        if parent:
            out += [f"CREATE TABLE {name} PARTITION OF {parent} {bound};", ""]
            continue
        cursor.execute(
            """
            SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                   pg_get_expr(d.adbin, d.adrelid)
            FROM pg_attribute a
            LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped
            ORDER BY a.attnum
            """,
            [oid],
        )
        columns = [
            f"    {col} {type_}{' NOT NULL' if not_null else ''}"
            + (f" DEFAULT {default}" if default else "")
            for col, type_, not_null, default in cursor.fetchall()
        ]
        # contype 'n': PostgreSQL 18 lists NOT NULL as constraints too.
        cursor.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE conrelid = %s AND contype <> 'n' ORDER BY conname",
            [oid],
        )
        columns += [f"    CONSTRAINT {c} {definition}" for c, definition in cursor.fetchall()]
        tail = f" PARTITION BY {partition_key}" if kind == "p" else ""
        tail += f" WITH ({options})" if options else ""
        out += [f"CREATE TABLE {name} (", ",\n".join(columns), f"){tail};", ""]
    cursor.execute(
        """
        SELECT i.relname, pg_get_indexdef(i.oid)
        FROM pg_index x
        JOIN pg_class i ON i.oid = x.indexrelid
        JOIN pg_class t ON t.oid = x.indrelid
        JOIN pg_namespace n ON n.oid = t.relnamespace
        WHERE n.nspname = current_schema() AND t.relname LIKE 'workhorse\\_%%'
          AND NOT t.relispartition
        ORDER BY i.relname
        """
    )
    out += [f"{definition};" for _, definition in cursor.fetchall()] + [""]
    cursor.execute(
        """
        SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = current_schema() AND c.relkind = 'S' AND c.relname LIKE 'workhorse\\_%%'
        ORDER BY 1
        """
    )
    out += [f"CREATE SEQUENCE {name};" for (name,) in cursor.fetchall()] + [""]
    cursor.execute(
        """
        SELECT p.proname, pg_get_function_identity_arguments(p.oid),
               pg_get_function_result(p.oid), l.lanname, p.prosrc,
               array_to_string(p.proconfig, ' SET ')
        FROM pg_proc p
        JOIN pg_namespace n ON n.oid = p.pronamespace
        JOIN pg_language l ON l.oid = p.prolang
        WHERE n.nspname = current_schema() AND p.proname LIKE 'workhorse\\_%%'
        ORDER BY 1, 2
        """
    )
    for name, arguments, result, language, source, settings in cursor.fetchall():
        digest = hashlib.sha256(source.encode()).hexdigest()[:16]
        out.append(
            f"-- FUNCTION {name}({arguments})\n--   RETURNS {result} LANGUAGE {language}"
            + (f" SET {settings}" if settings else "")
            + f" -- body sha256 {digest}"
        )
    return "\n".join(out) + "\n"


def test_the_migrations_reproduce_the_schema_snapshot():
    with connection.cursor() as cursor:
        current = describe_schema(cursor)
    if REWRITE:
        SNAPSHOT.write_text(current)
    recorded = SNAPSHOT.read_text() if SNAPSHOT.exists() else ""

    assert current == recorded, (
        f"the migrated schema differs from {SNAPSHOT.name}: if the change is intended, "
        "run `make schema` and review the diff of docs/schema.sql"
    )


def test_the_snapshot_names_every_table_and_function():
    """The description is not empty by accident: it covers what the tests know of."""
    text = SNAPSHOT.read_text()

    assert "CREATE TABLE workhorse_job_runtime (" in text
    assert "CREATE TABLE workhorse_attempt_history_default PARTITION OF" in text
    assert "-- FUNCTION workhorse_claim_many_v1(p_worker text" in text
    assert "CREATE INDEX workhorse_runtime_ready ON" in text
