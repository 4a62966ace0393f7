"""A third-party package shaped like Wagtail's ``modelsearch``: a Django app
of its own (it has an ``apps.py``) that the project never lists in
``INSTALLED_APPS``; an installed app (``jobtests``, as ``wagtail.search``
does for ``modelsearch``) imports its tasks from ``ready()``. Nothing in it
is written for workhorse: its task uses Django's ``@task``."""
