"""Record what a release froze: ``python scripts/release_manifest.py 0.2.0``.

Adds the release to ``tests/migration/released.json``: the sha256 of every
migration file of ``django_workhorse/migrations`` and every file of
``django_workhorse/sql`` as they are now. A file an earlier release listed
keeps the digest it was released with (it must not have changed: the test
``tests/migration/test_released_files.py`` says so first). From then on that
test fails when any listed file changes: a released migration, and the SQL
it runs, are history (docs/releasing.md).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "tests" / "migration" / "released.json"


def frozen_files() -> list[Path]:
    """The files a release freezes: its migrations and the SQL they run."""
    package = ROOT / "django_workhorse"
    migrations = [p for p in (package / "migrations").glob("[0-9]*.py")]
    return sorted(migrations + list((package / "sql").glob("*.sql")))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(version: str) -> None:
    releases = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}
    if version in releases:
        sys.exit(f"{version} is already recorded in {MANIFEST.relative_to(ROOT)}")
    files = {str(p.relative_to(ROOT)): digest(p) for p in frozen_files()}
    releases[version] = files
    MANIFEST.write_text(json.dumps(releases, indent=2) + "\n")
    print(f"recorded {len(files)} files of {version} in {MANIFEST.relative_to(ROOT)}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python scripts/release_manifest.py VERSION")
    main(sys.argv[1])
