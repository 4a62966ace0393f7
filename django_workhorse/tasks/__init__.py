"""The Django Tasks backend: ``django_workhorse.tasks.WorkhorseBackend``.

Importing this package imports no models (Django builds task backends while
user modules are still importing). See docs/django-tasks.md.
"""

from .backend import WorkhorseBackend, WorkhorseTask

__all__ = ["WorkhorseBackend", "WorkhorseTask"]
