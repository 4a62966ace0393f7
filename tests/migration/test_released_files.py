"""A released migration, and the SQL it runs, never change (docs/releasing.md).

``tests/migration/released.json`` lists, for each release, the sha256 of
every migration file and every ``.sql`` file as that release shipped them
(the release steps write it with ``scripts/release_manifest.py``). A database
migrated by a release has run those files and will never run them again: a
later edit would reach new databases only, and the two would differ without
anyone noticing. So a change to a released function ships as a new
migration that reads a new file, and these tests fail on any edit of a
listed file, naming it and the fix.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path

import django_workhorse
from django_workhorse.db import installed_sql

ROOT = Path(__file__).resolve().parents[2]
RELEASES: dict[str, dict[str, str]] = json.loads(
    (ROOT / "tests" / "migration" / "released.json").read_text()
)


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def test_no_file_a_release_froze_has_changed():
    changed = []
    for version, files in RELEASES.items():
        for name, digest in files.items():
            path = ROOT / name
            if not path.exists():
                changed.append(f"{name} (released in {version}) is gone")
            elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                changed.append(f"{name} (released in {version}) has changed")
    assert not changed, (
        "; ".join(changed) + ": released files never change. Put the file back as released "
        "(git checkout v<version> -- <file>) and ship the change as a new migration that runs "
        "a new .sql file (docs/releasing.md#changing-the-sql-after-a-release)"
    )


def test_migrations_added_after_a_release_come_after_its_migrations():
    released = {
        Path(name).stem
        for files in RELEASES.values()
        for name in files
        if name.startswith("django_workhorse/migrations/")
    }
    names = list(installed_sql.package_migrations())
    assert released <= set(names)
    assert set(names[: len(released)]) == released, (
        f"the migrations in order are {names}: a new migration goes after every released one"
    )


def test_every_release_has_its_section_in_the_changelog():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    for version in RELEASES:
        assert re.search(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d\d-\d\d$", changelog, re.M), (
            f"CHANGELOG.md has no '## [{version}] - YYYY-MM-DD' section"
        )
    assert re.search(r"^## \[Unreleased\]$", changelog, re.M)


def test_the_package_version_is_the_newest_release_or_the_next_one():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert django_workhorse.__version__ == version
    assert version_key(version) >= max(map(version_key, RELEASES))
