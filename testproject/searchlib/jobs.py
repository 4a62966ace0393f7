"""The package's native job, for a project whose third party uses workhorse itself."""

from __future__ import annotations

import django_workhorse as workhorse


@workhorse.job
def rebuild_index(name: str) -> str:
    """Rebuilds the index ``name``."""
    return name
